"""The evidence chapter 12 reads was measured on the code in the tree, and a
test fails when a source it ran differs (issues 30 and 31, review ch09-13 #1).

The kill matrix (``bench/results/ch12_frameworks_tree.json``) records the
sha256 of every module in its manifest; ``evidence.drifted`` names each one
its checkpoint runs (``evidence.sources_used``) whose hash is not the tree's.
A file edited since, whose edit was read and does not change what the
checkpoint does, is acknowledged below AS IT IS NOW (its sha256) with what
the edit does; any other drift, a second edit of an acknowledged file, or an
acknowledgement no longer needed fails. Rerun the checkpoint instead when an
edit changes what it measures.

The cost table (``ch12_frameworks_cost.json``) hashes no sources: the
chapter names the commit that wrote it, checked here against git.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from crashcourse.lab import evidence

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MATRIX = RESULTS / "ch12_frameworks_tree.json"
COST = RESULTS / "ch12_frameworks_cost.json"
SCRIPT = ROOT / "checkpoints" / "ch12_frameworks.py"
CHAPTER = ROOT / "book" / "12_your_framework_under_the_same_kill.md"

# manifest key -> (sha256 in the tree now, what the edit does to the matrix).
# The matrix was measured with all six frameworks named (114 of 114 held);
# edited since:
RUNS_ON = ("each installer declares RUNS_ON and refuses another database before"
           " writing (store.check_backend); the decisions and the workflow run on"
           " PostgreSQL too (identity key, table_exists, key-ordered snapshot):"
           " the matrix's SQLite stores install and read as before")
SECONDS = ("a seconds option parsed by validate.seconds (finite, ASCII digits)"
           " instead of float: a refusal at the command line only; the checkpoint"
           " passes plain decimal seconds, parsed to the same value")
HELD = ("a lock another process keeps past the busy timeout (a holder paused"
        " mid-write) is the worker's documented 'held' status and one JSON line"
        " (options.one_line_errors(held=...)), where it was exit 74 'the machine"
        " refused' (issue 35): no matrix trial meets a locked file")
SCRIPTED = ("the scripted model's reply (shop.scripted_reply) is written once in"
            " shop, where DBOS's, Restate's and Temporal's agents each wrote the"
            " same seven lines: the same messages, ids and order")
ONE_FENCE = ("the fence check is one function, fence.assert_current (record=True"
             " sets the pause flag aside, as assert_holder and journal.holds"
             " did), with one context manager, fence.fenced: the same check of"
             " the same rows inside the same transaction, read as one statement"
             " (the work row with runtime_control), as the journal read it"
             " (issue 33)")
ONE_GRANT = ("SQLite's grant is one function, claims.grant_locked, which the"
             " read-first mutant calls too; its UPDATE raises the generation the"
             " row holds (RETURNING it) where it wrote the one it read under the"
             " same lock: the same rows (issue 33)")
TOKEN = ("the fencing token travels whole, effects.FencingToken(work,"
         " generation) (a claim's token), to the supplier's client, which"
         " spells it as the same X-Work-Id and X-Generation headers: the same"
         " requests on the wire (issue 33)")
FACE = ("gained __all__, its public face for the book (issue 33): a name"
        " list nothing the matrix runs reads")
BACKEND = ("the same statements, asked of the backend object: store.dialect(conn)"
           " begins the write, says whether a table exists and lists the"
           " tables, and store.connect picks the backend from its address"
           " once (store.dialect.BACKENDS); on SQLite, the matrix's, the same"
           " BEGIN IMMEDIATE and sqlite_master reads (issue 33)")
ASKS_THE_STORE = ("asks the store whether a table exists or which it holds"
                  " (store.table_exists, store.tables) instead of its own"
                  " sqlite_master query, and the backend for its server"
                  " process: on SQLite, the matrix's, the same catalogue reads"
                  " (issue 33)")
ONE_BUSY = ("a lock waited out is one rule, store.lock_waited_out ('locked' or"
            " 'busy' in the error's words), where three modules and the store"
            " each spelled the same two tests: the same errors caught (issue 33)")
ACKNOWLEDGED: dict[str, tuple[str, str]] = {
    "script/ch12_frameworks.py": (
        "05ec50daa0525856342a20fdd119fc94ea0a17c01497b07084788e400882db96",
        "the default now runs all six frameworks, the run that wrote the matrix"
        " named them (--frameworks): the same cells, in the same order, with"
        " the same seed; an unknown name in --frameworks or --points is now"
        " refused (exit 2) instead of selecting nothing"),
    "crashcourse/workers/frameworks/temporal_server.py": (
        "9adf468a7e4ae8d5be947cb93faa73fcf119e872b68df5f752956dac5dc97fe8",
        "the wait until a server serves and its stop moved into OwnedServer, shared"
        " with Restate's: the same checks, every 0.2 s, the same bound; the error"
        " names 'the Temporal dev server'"),
    "crashcourse/workers/frameworks/restate_server.py": (
        "a34b9aa9786ac9067cc9f31a42119388045bda4418c7a8ba0d5720a8b54fdd58",
        "RunningServer is an OwnedServer (temporal_server): the same readiness"
        " checks through its wait_serving; nothing a trial does changes"),
    "crashcourse/workers/frameworks/shop.py": (
        "d50b4ec7b219c07d49c01d1bc84c510d368b95bdd7ab35d38c3d03a662294e40", (
        "gained agent_parser, parse_agent and serve_agent, the start-up Restate's"
        " and the Agents SDK's agents wrote twice; the tools and world unchanged;"
        " " + SCRIPTED + "; its order passes FencingToken(trial, 1) where it"
        " passed the pair: " + TOKEN + "; " + FACE)),
    "crashcourse/workers/frameworks/restate_agent.py": (
        "77bd5018b72b9fe84f51c0795eb12c0b0a0dbcfd13275d5aaccb97bd606d2295",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world); " + SCRIPTED),
    "crashcourse/workers/frameworks/openai_agents_agent.py": (
        "7a62467650a561f610c595e5b9fe6037c6ee54125d61ad9740074e27118f22ac",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world)"),
    "crashcourse/claims/__init__.py": (
        "7a3f7bcfad674c0d9d8360466bb63ba6084aec04d9f47fdf8b5342a43c74d9b3", (
        ((
        RUNS_ON + "; " + ONE_GRANT)) + "; " + FACE)),
    "crashcourse/claims/fence.py": (
        "b983e79be8cbef0f25afdad2c9c3951c05542e0a96c296be22b751ffd2408ace", (
        RUNS_ON + "; " + ONE_FENCE)),
    "crashcourse/claims/orders.py": (
        "dbe23a96f150108558169634016f5354e6315099d40bb4fc88ef47f7d15fbac7", (
        ((
        RUNS_ON + "; " + TOKEN)) + "; " + FACE)),
    "crashcourse/claims/postgres.py": (
        "a69205a233a08e17549b82343ca8b6ad8e54bea5dd55968f1feefa1a2ec1d15a", (
        RUNS_ON + "; the server's claim function is read from claims/postgres.sql"
        " (a named query) instead of built from these statements by a regex:"
        " the same text, byte for byte, so the same function (issue 33); the"
        " matrix's stores are SQLite's")),
    "crashcourse/claims/turns.py": (
        "779f1623f76ca67795ef316a3fe86cc6aad4be141bb6f750b630bc7f063736eb", RUNS_ON),
    "crashcourse/control.py": (
        "6d2550d74316828da8a99554c734efb88b057568d3093a690540740d8e48dcaf", (
        RUNS_ON + "; docstring only: " + ONE_FENCE)),
    "crashcourse/effects.py": (
        "fd81218fecec83db4b55ce863d251b58423fb89e5a3bd75a3d6b98546ac418a4", (
        ((
        RUNS_ON + "; gained FencingToken, a named pair nothing else here uses: "
        + TOKEN)) + "; " + FACE)),
    "crashcourse/journal/__init__.py": (
        "cbd1f03254a1e8413f064be045531b3e2804459dffc35634486ea25f01a655d5", (
        ((
        RUNS_ON + "; " + ONE_FENCE)) + "; " + FACE)),
    "crashcourse/journal/decisions.py": (
        "4bb0bc3f2a72a8430d7148ef4959b34c9dfe894a7c9eb67055692743ef9a26ac", (
        (RUNS_ON) + "; " + FACE)),
    "crashcourse/store/__init__.py": (
        "76a98176d43be666dc365801a08a7ea3267f000b00b059632450333674619f2c", (
        ((
        RUNS_ON + "; gained write_lock_free(), a probe for tests and chapter 09;"
        " nothing the matrix calls changed (issue 36)")) + "; " + FACE
        + "; " + BACKEND)),
    "crashcourse/workers/paying.py": (
        "d8186f367117a25644f928bab415d12052217dba450f098012a749eeb941e23c",
        RUNS_ON + "; EXITS gains 'held' (6): " + HELD),
    "crashcourse/workers/restock_note.py": (
        "37e5772dc6b6c4474e714e0dd19e869841f1acf3aa54ce16152674dd56f46b60",
        RUNS_ON + "; " + HELD),
    "crashcourse/workflow/__init__.py": (
        "e4ee4a85983d27fca41ee823faa116b4efcbbfe8edcf42967025a4c7be881c7b", (
        ((RUNS_ON
         + "; " + ("transition() gains the boundary moving:<state> inside its write"
        " transaction, announced only by a process asked to stop there"
        " (issue 35); the matrix never asks"))) + "; " + FACE)),
    "crashcourse/workflow/steps.py": (
        "2b3b69317bad8ab9ff432e2acd968cfcc3a5e68c6c66fbee092b930c1069eb42", (
        (RUNS_ON) + "; " + FACE)),
    "crashcourse/store/postgres_server.py": (
        "a3f45dfafebc24a4b8c1d3908ada0080cc6b21d6e66503e2d95473bd393e330b",
        "_halt's kill path (a server past its shutdown bound) waits for the"
        " postmaster to show T before listing its backends and for them to go;"
        " a clean shutdown, the matrix's path, is unchanged (issue 36)"),
    "crashcourse/waiting.py": (
        "c8e8076789853a4ef772e38bedd32492d4fe52b25d4f86722d27bac8576581a5", (
        ("gained waits_in(), where a thread is blocked, for tests and chapter 09;"
        " wait_until unchanged (issue 36)") + "; " + FACE)),
    "crashcourse/boundary.py": (
        "fcc3777cb6f88e75294e08230beb7e6e286368cd19b956302e775fc79043fb68", (
        ("a held worker's bound may be set by its parent's environment"
        " (CRASHCOURSE_HOLD_SECONDS, refused unless seconds above 0, before the"
        " boundary is announced); unset, it is 30 s as the matrix ran it, and"
        " release, kill or a closed pipe end the hold as before (issue 36)")
        + "; " + FACE)),
    "crashcourse/workers/scheduler.py": (
        "596c34f5a73ff4d68d674adf6816c85d9ded954479d9c2ae61da362e875f4173",
        ("records each tick in its own scheduler_ticks row (tests wait for ticks,"
         " not sleeps); the matrix does not run the scheduler (issue 36); " + HELD)),
    "crashcourse/workers/journal_worker.py": (
        "a68cc897980723da19e3b8a7375536d6bc7bbe8c5326ccbdb8c5b55a9652c00d", (
        SECONDS + "; and a service's lock kept past the declared wait is"
        " ServiceLocked, 'held' (4) with a line naming the service, where it"
        " was 'held' blaming the journal's lock (issue 35): no matrix trial"
        " meets a locked service; and the journal file gets the full integrity"
        " check (a damaged index refused, exit 2), where it had the quick one:"
        " a sound journal, as every matrix trial's, opens as before; " + FACE)),
    "crashcourse/workers/workflow_worker.py": (
        "1b31c4a035a159149d9d744dc191a3105248c6c38f72ff3bab2cf2fae7df2b79", (
        (SECONDS + "; and the workflow's write lock kept past the busy timeout"
        " is 'held' (4), a service's lock past the call's wait 'unreachable'"
        " (5), where both were exit 74 or a traceback (issue 35): no matrix"
        " trial meets a locked file; " + TOKEN) + "; " + FACE)),
    "crashcourse/workers/frameworks/dbos_agent.py": (
        "d7c37bcbd85fc4cdd9548e5cb0d470e39cead169c75b795ab0b1ca4222b8438e", (SCRIPTED)),
    "crashcourse/workers/frameworks/temporal_agent.py": (
        "7d056d8a171055523b4e6c37b171071b5d42149e0d72674b8cb724e01c6f5bbf", (SCRIPTED)),
    "crashcourse/adapters/__init__.py": (
        "1ac7bdc9ad4701bcb5821e30bc2b7df4cf9247205c75121bb9542e36d57151a7",
        (("a process keeps one journal connection per thread and SQLite file (its"
        " schema installed once, reopened when the file is replaced, rolled back"
        " after an error) where each call opened, installed and closed it; the"
        " probe's answer shape is checked before a tool's first claim, not at"
        " every call: the same transactions and commits per call, so the same"
        " kill points and rows (issue 34)") + "; " + (FACE))),
    "crashcourse/workers/options.py": (
        "4a9ab45fed9e77409cc67139dbc2a2858ce8bee91cfc1370790de46e559a76b9",
        ("gained OWN_FILE, the RUNS_ON of a worker's own file (SQLite's); and"
         " one_line_errors(held=N) with lock_kept: " + HELD)),
    "crashcourse/workers/charge.py": (
        "8abd293924eef26198c94098fe2e256049b0523bdf2c50e051dcd4d40866763c", (HELD)),
    "crashcourse/workers/pay_invoice.py": (
        "3d94e796e3d8560cda8ce3fdead0123afd59c5417a5c39b46b6d966986ea4140",
        ((HELD) + "; " + (FACE))),
    "crashcourse/workers/payment_command.py": (
        "2e046e7fa8b3a3b153e99238e07e5642d0ad58d27c9579a2bd3e7e8eda9b85cf",
        ("--help's exit statuses"
        " name 6, held: " + HELD)),
    "crashcourse/workers/shop_worker.py": (
        "6f2418a95333ac52799f270b826682138ed1b52ee1384385dfa370409dbe4846",
        ((HELD + "; and the agent's own file gets the full integrity check"
        " (a damaged index there is refused, exit 2), where it had the quick"
        " one: a sound file, as every matrix trial's, opens as before")
        + "; " + ("the read-first mutant is one function for both backends, granting"
        " with claims.grant_locked; the reference drain is unchanged, and the"
        " matrix never runs --read-first (issue 33)"))
        + "; a lease outrun before the admission is exit 6 and one line, where"
        " it was a LeaseTooShort traceback, and a boundary signed_off fires"
        " only when asked: the matrix never runs the shop worker (issue 36)"),
    "crashcourse/workers/wedged_worker.py": (
        "de9751e7d4e6cbf27e4972e38b2e3721b4ca55d7088341dea2df80e44670a602", (HELD)),
    "crashcourse/workers/charge_read_first.py": (
        "8b8ca1b2152574a0373ef5350ae0b26df2d1df79bc9b301056dce8779ec23fae",
        (HELD + "; and the"
        " payment service's lock kept past --busy-timeout-ms (now passed to it)"
        " is PaymentServiceBusy, 'busy' (5) as charge answers it, where it was"
        " exit 74: a race trial never waits out the timeout")),
    "crashcourse/workers/host_worker.py": (
        "8021cd28daf07f00c838a4e01a3c64d12d5a64bc6768b1ace7d7ef9c5b99945a",
        ((HELD + "; and"
        " wait_for_parent holds for boundary.hold_seconds() (the harness's"
        " CRASHCOURSE_HOLD_SECONDS), unset 30 s as the matrix ran it; drain"
        " mode (chapter 10's race) holds its first claim until the parent lets"
        " it go on, so every racer is in the race before any drains (issue 36)")
        + "; " + ("its read-first mutant is shop_worker.claim_read_first, imported (two"
        " imports gone with its copy); the reference claim is unchanged; " + TOKEN))),
    "crashcourse/lab/harness.py": (
        "d4fe7fe7c616af3d5f63f50a744e27c04f07a711600a74bd2bf2a4df4323cb1d",
        (("gained Moments, the parent's wall-clock instants of a trial for the"
        " picture beside the evidence, which kill_and_resume also fills; the"
        " matrix's trials start, hold and kill their workers as before")
        + "; " + (FACE))),
    "crashcourse/store/dialect.py": (
        "98e45baad22b57c2699e3d937a07bbf35eca0d738b3477e34b47d60c5f47aee3",
        (("lock_row is FOR UPDATE OF work on a server, so the fence's one read"
        " (the work row with runtime_control) locks the work row alone, as its"
        " read of the work row did; SQLite's, the matrix's, is unchanged"
        " (issue 33)") + "; " + FACE + "; " + BACKEND)),
    "crashcourse/claims/work.py": (
        "1b03628da9f3d7cbe1ad5f3b6971070ec992bc7383602b6f6d91cf6249bafab6",
        ("Claim gained a token property, FencingToken(id, generation): " + TOKEN)),
    "crashcourse/services/supplier/__init__.py": (
        "80d12067bee6549b0ba7f5e5f2c1632b49ff3e68e35ec7600f4403beb6767a4e",
        (("place_order, release_order and fence_work take token=FencingToken, and"
        " token() is headers(operation_key, token): " + TOKEN) + "; " + FACE)),
    "crashcourse/workers/unfenced_journal_worker.py": (
        "021fe28fb2c3c84714dc7af3836e17eb1982e3fa9bf14a6d62b33eddac8128ef",
        ("the negative control takes out fence.assert_current, now the one"
        " check, where it took out journal.holds: the same checks off (issue 33)")),
    "crashcourse/__init__.py": (
        "351d0d4d98318376623762c66c6d0dd8a542e3c4256032aa13b0ea2fc72a5ba7", (FACE)),
    "crashcourse/adapters/langgraph.py": (
        "74fcb0e7ab064e8b9854fd6c893bc66784d54a9e02d9acc76ee92f16b976ce68", (FACE)),
    "crashcourse/journal/plan.py": (
        "2728e0fbe960737c7bc0e0797872b591534a18168df2f81b95aa34cc92bf29b0", (FACE)),
    "crashcourse/lab/__init__.py": (
        "df9537e149584a31c62002421d63942ebcd8a667ce0daf1d851ff7874e36d9d5", (FACE)),
    "crashcourse/lab/example.py": (
        "99cf6ac8b59de8b3e2de4da07c6e1b8fd4a4b1accdced90d8a2f1e0ce5936ec3", (FACE)),
    "crashcourse/lab/two_hosts.py": (
        "57b3eb7c7b2919d3666a86b65b058138901fe329ede58bf11daac40194851301", (FACE)),
    "crashcourse/powerloss/__init__.py": (
        "90927bbc0c20e9e9790a69c14100df3fa7b1b254e68a575f908859be6dd8d9c4", (FACE)),
    "crashcourse/powerloss/images.py": (
        "cff0e382f0ca3d25490f3b13fe420c6c1eb28f568a7f39512f5108dc0c30dab7",
        ("crash_states names a sync's pending operations before applying them, on"
         " two lines where it was one (chapter 11 prints it): the same states;"
         " no matrix trial models a power cut; " + FACE)),
    "crashcourse/powerloss/vfs.py": (
        "335f706ebb3ce83519645d6fdadd6ca312848eae20d631fb10cf8b464d904cb7",
        ("a shorter comment in RecordingFile.xSync (chapter 11 prints it); no"
         " code changes; " + FACE)),
    "crashcourse/services/__init__.py": (
        "89c7e6cc8dcb362b38b237563fa79255410b5b96a27749cb4b69b8878d0f9389", (FACE)),
    "crashcourse/services/payments/__init__.py": (
        "40c9bab6ca28e4d344aa3f92cd8b5f728ccdbb2fe803949e0e58757410ea11f1", (FACE)),
    "crashcourse/services/supplier/process.py": (
        "63ac3dd1bd17b890ab3ce47a4801f61e2e69e6a7cd269f07ad316b61430abc07", (FACE)),
    "crashcourse/services/supplier/request.py": (
        "652df484ee70243f8c7c81e3bd0b2cf971eee3e98a080762ee8c1d314a4e3873", (FACE)),
    "crashcourse/validate.py": (
        "cdc588a4e63e53e497dd8faf4a68271420a4156eb5a9bc2b17a4f867c6cda444", (FACE)),
    "crashcourse/workers/__init__.py": (
        "a44ea34fabfc20793e43d6cbf182084824d537fc9a5dfe29da3001900d45ddbc", (FACE)),
    "crashcourse/workers/frameworks/__init__.py": (
        "f33ff9ffd297055e924e23cec5fc23f49e891159be9e0fb6d61e17003bcb7912", (FACE)),
    "crashcourse/store/queries.py": (
        "a11a139fc32d687163bf1d6dad90b07042b87dc8a4a1750b400faedb8231b955",
        ("new: reads named queries from a .sql file; only the server's claim"
        " uses it, which the matrix never runs (issue 33)")),
    "crashcourse/lab/pauses.py": (
        "f969b27d54acf8238a4ac2db365cc2cc5e79ef482f9ce732908d561ad5513ad6",
        "the pause campaign (issue 29) draws each trial's instants from its own"
        " seeded stream over each configuration's life, counts a draw only when"
        " the kernel showed the worker stopped, adds a forced instant and re-guards"
        " a copied world by its own broker; the matrix never runs a pause campaign"),
    "crashcourse/lab/workflow_pauses.py": (
        "f1b918cef7bbfa5e8b41a4be7d258d7cf86930b905ec6806f28c3874a13d93ae",
        "new: the pause campaign of chapter 08's workflow worker (issue 29), run by"
        " bench/bench_pauses.py --worker workflow; the matrix never imports it"),
    "crashcourse/lab/paused_stop.py": (
        "57ba978d1da85f9fa50020ee798ddea73a997fedc5c13612dabad43cb3b6fed5",
        "new: the operator's stop against a holder frozen inside its fenced write"
        " (issue 29), run by tests/claims/test_paused_stop.py and chapters 09 and"
        " 10; the matrix never imports it"),
    "crashcourse/services/broker.py": (
        "57be5fcfc645a90d62ad2a3acb727003e3f5f6b9e94dd86b598359b77f38c842",
        "the matrix never guards a service with a broker; " + ASKS_THE_STORE),
}
# Modules acknowledged above that then asked the store whether a lock was
# waited out (ONE_BUSY).
for _module in ("claims/fence.py", "services/payments/__init__.py",
                "services/broker.py", "store/__init__.py"):
    _sha, _why = ACKNOWLEDGED[f"crashcourse/{_module}"]
    ACKNOWLEDGED[f"crashcourse/{_module}"] = (_sha, _why + "; " + ONE_BUSY)
# Modules acknowledged above for earlier edits that then asked the store too.
for _module in ("claims/turns.py", "workers/paying.py", "workers/restock_note.py",
                "workers/scheduler.py", "workers/host_worker.py",
                "powerloss/__init__.py"):
    _sha, _why = ACKNOWLEDGED[f"crashcourse/{_module}"]
    ACKNOWLEDGED[f"crashcourse/{_module}"] = (_sha, _why + "; " + ASKS_THE_STORE)


def unexplained(document: dict, script: Path, acknowledged: dict) -> list[str]:
    """Drift not acknowledged as the file is now, and acknowledgements of
    files that no longer drift."""
    drifted = evidence.drifted(document, script)
    now = evidence.source_hashes(script)
    wrong = [key for key in drifted
             if key not in acknowledged or acknowledged[key][0] != now.get(key)]
    stale = [f"stale: {key}" for key in acknowledged if key not in drifted]
    return wrong + stale


def matrix() -> dict:
    return json.loads(MATRIX.read_text())


def test_the_chapter_reads_the_matrix_and_the_cost_table_only():
    text = CHAPTER.read_text()
    quoted = set(re.findall(r'"results"\s*/\s*"([\w.-]+\.json)"', text))
    assert quoted == {MATRIX.name, COST.name}


def test_the_matrix_ran_on_the_code_in_the_tree():
    assert unexplained(matrix(), SCRIPT, ACKNOWLEDGED) == []
    assert all(what.strip() for _, what in ACKNOWLEDGED.values())


def test_an_edited_script_is_drift(tmp_path):
    copy = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, copy)
    assert unexplained(matrix(), copy, ACKNOWLEDGED) == []  # the copy is as measured
    copy.write_text(copy.read_text() + "\nRECORD_WAIT_S = 1.0\n")
    assert unexplained(matrix(), copy, ACKNOWLEDGED) == ["script/ch12_frameworks.py"]


def test_a_module_the_matrix_ran_that_differs_is_drift():
    document = matrix()
    recorded = document["manifest"]["sources_sha256"]
    # A module the matrix ran that no acknowledgement covers (adapters/__init__
    # was the one, until its own edit was acknowledged).
    key = next(k for k in sorted(evidence.sources_used(SCRIPT))
               if k.startswith("crashcourse/") and k not in ACKNOWLEDGED)
    recorded[key] = "0" * 64  # as if measured on another version of it
    assert unexplained(document, SCRIPT, ACKNOWLEDGED) == [key]


def test_an_acknowledged_file_edited_again_is_drift():
    document = matrix()
    key = "crashcourse/services/drive.py"
    document["manifest"]["sources_sha256"][key] = "0" * 64  # measured before an edit
    now = evidence.source_hashes(SCRIPT)[key]
    read = {**ACKNOWLEDGED, key: (now, "an edit read and explained")}
    assert unexplained(document, SCRIPT, read) == []
    again = {**ACKNOWLEDGED, key: ("f" * 64, "an edit read and explained")}  # again
    assert unexplained(document, SCRIPT, again) == [key]


def test_an_acknowledgement_no_longer_needed_fails():
    hashes = evidence.source_hashes(SCRIPT)
    recorded = matrix()["manifest"]["sources_sha256"]
    key = next(key for key, now in sorted(hashes.items())  # a file as measured
               if key not in ACKNOWLEDGED and recorded.get(key) == now)
    now = hashes[key]
    remeasured = {**ACKNOWLEDGED, key: (now, "an edit the matrix was measured on")}
    assert unexplained(matrix(), SCRIPT, remeasured) == [f"stale: {key}"]


def test_the_chapter_names_the_commit_that_wrote_the_cost_table():
    wrote = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--abbrev=7", "--",
         f"bench/results/{COST.name}"], check=True, capture_output=True,
        text=True).stdout.strip()
    assert wrote and f"commit `{wrote}`" in CHAPTER.read_text()
