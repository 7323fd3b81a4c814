"""The payment workers (chapters 00-04): one sequence, one exit-code table, the
checkpoint in the worker's own file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from crashcourse import store
from crashcourse.services import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import charge, options, pay_invoice, paying, restock_note

ORDER, AMOUNT, CURRENCY = "SUP-0042", 4000, "USD"


def run(worker, db, *extra, amount=AMOUNT):
    state = db.with_name("worker.sqlite")
    args = [sys.executable, "-m", f"crashcourse.workers.{worker}",
            "--payments", str(db), "--state", str(state), "--task", "restock-0042",
            "--order", ORDER, "--amount", str(amount), "--currency", CURRENCY, *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def pay(db, *extra):
    return run("pay_invoice", db, *extra)


def worker_checkpoints(db):
    with opened(db.with_name("worker.sqlite")) as state:
        return paying.checkpoints(state)


def test_a_locked_database_ends_in_a_busy_report_and_no_charge(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    with opened(db) as holder, immediate(holder):  # another writer holds the lock
        busy = pay(db, "--busy-timeout-ms", "100")
    assert busy.returncode == paying.EXITS["busy"], busy.stderr
    assert "Traceback" not in busy.stderr
    assert json.loads(busy.stdout)["outcome"] == "busy"
    assert payments.snapshot(db)["payments"] == []
    again = pay(db)  # the lock is gone: the same key pays exactly once
    assert again.returncode == 0, again.stderr
    assert len(payments.snapshot(db)["payments"]) == 1
    assert [row["task"] for row in worker_checkpoints(db)] == ["restock-0042"]


def test_both_workers_share_one_exit_table_and_checkpoint_after_success(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    first = run("charge", db, "--key", "k-1")
    assert (first.returncode, json.loads(first.stdout)["outcome"]) == (0, "committed")
    replay = run("charge", db, "--key", "k-1")
    assert json.loads(replay.stdout)["outcome"] == "already_committed"
    assert replay.returncode == 0
    conflict = run("charge", db, "--key", "k-1", amount=AMOUNT + 1)
    assert conflict.returncode == paying.EXITS["conflict"] == 4, conflict.stderr
    refused = run("charge", db, "--key", "k-2", amount=AMOUNT + 1)
    assert refused.returncode == paying.EXITS["refused"] == 3, refused.stderr
    assert json.loads(refused.stdout)["reason"] == "not_approved"
    assert "Traceback" not in conflict.stderr + refused.stderr
    assert len(payments.snapshot(db)["payments"]) == 1
    # only the two answers that mean "paid" were checkpointed, under the key paid
    assert [(r["key"], r["outcome"]) for r in worker_checkpoints(db)] == [
        ("k-1", "already_committed")]


# What a payment or restock worker must not load to do its work: the harness
# starts two per trial, and their start-up is the trial's cost.
HEAVY = ("argparse", "shutil", "pathlib", "subprocess", "crashcourse.lab.harness",
         "crashcourse.lab.example", "crashcourse.services.mail")


def test_the_workers_start_light(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    common = ["--task", "restock-0042", "--order", ORDER, "--amount", str(AMOUNT),
              "--currency", CURRENCY, "--payments", str(db)]
    runs = {
        "pay_invoice": [*common, "--state", str(tmp_path / "a.sqlite")],
        "charge": [*common, "--state", str(tmp_path / "b.sqlite"), "--key", "k-9"],
        "restock_note": ["--db", str(tmp_path / "shop.sqlite"), "--task", "t",
                         "--sku", "oat-milk", "--quantity", "2"],
    }
    for worker, argv in runs.items():
        code = (f"import sys; from crashcourse.workers import {worker};"
                f" code = {worker}.main({argv!r});"
                f" print(code, sorted(m for m in {HEAVY!r} if m in sys.modules))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                              text=True, timeout=60)
        assert done.stdout.splitlines()[-1] == "0 []", (worker, done.stderr)


@pytest.mark.parametrize("argv", [
    ["--payments", "p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", "4000", "--currency", "USD"],
    ["--currency", "EUR", "--amount", "12", "--order", "o", "--task", "",
     "--state", "s", "--payments", "p", "--retry", "new-key",
     "--busy-timeout-ms", "100", "--notify", "mail.sqlite"],
    ["--pay", "p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", "1", "--currency", "USD"],  # an abbreviation: argparse's
    ["--payments=p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", "1", "--currency", "USD", "--task", "again"],
])
def test_the_quick_reading_is_what_argparse_reads(argv):
    quick = options.quick(pay_invoice.OPTIONS, argv)
    full = options.full_parser("", pay_invoice.OPTIONS).parse_args(argv)
    assert quick is None or quick == vars(full)
    assert vars(pay_invoice.parse(argv)) == vars(full)


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["--task"], ["--amount", "many"], ["--retry", "maybe"],
    ["--payments", "p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", " 12 ", "--currency", "USD"],  # int() reads it; a person did not
    ["--payments", "p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", "-5", "--currency", "USD"],  # a value with a dash: argparse's
    ["--payments", "p", "--state", "s", "--task", "t", "--order", "o",
     "--amount", "1", "--currency", "USD", "--bogus", "1"],
])
def test_what_argparse_refuses_is_refused_by_argparse(argv, capsys):
    assert options.quick(pay_invoice.OPTIONS, argv) is None
    with pytest.raises(SystemExit) as raised:
        pay_invoice.parse(argv)
    assert raised.value.code == (0 if argv == ["--help"] else options.BAD_INPUT)
    said = capsys.readouterr()
    if argv == ["--help"]:
        assert said.out.startswith("usage: ")  # argparse's own help
    else:  # argparse's message, on ONE line (issue 14), not the usage first
        assert len(said.err.splitlines()) == 1 and ": error: " in said.err


@pytest.mark.parametrize("worker", [pay_invoice, charge, restock_note])
def test_help_explains_every_option(worker):
    done = subprocess.run([sys.executable, "-m", worker.__name__, "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    words = " ".join(done.stdout.split())
    for option in worker.OPTIONS:
        assert option.flag in words and " ".join(option.help.split()) in words


def test_install_on_a_made_file_is_a_read(tmp_path):
    # A resumed worker's install must not wait for the write lock: another
    # writer holds it here, and a write transaction would run out its timeout.
    state = tmp_path / "worker.sqlite"
    with opened(state) as conn:
        paying.install(conn)
    with opened(state) as holder, immediate(holder), \
            opened(state, busy_timeout_ms=1) as conn:
        paying.install(conn)
        assert paying.checkpoints(conn) == []


def forget_keys(db):
    """What a real provider does after its retention window (Stripe may
    remove a key once it is 24 hours old): the charges stay, their
    idempotency keys are no longer known. Here the key column IS the
    idempotency key, so the rows are kept under another name (with the
    evidence rows that point at them)."""
    with opened(db) as conn, immediate(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in ("payments", "payment_evidence"):
            conn.execute(f"UPDATE {table} SET key = 'forgotten:' || key")


def test_a_finished_task_is_not_paid_again_when_the_service_forgot_its_key(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    assert pay(db).returncode == 0
    forget_keys(db)
    again = pay(db)  # the same task, its checkpoint says it finished
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["outcome"] == "already_committed"
    assert len(payments.snapshot(db)["payments"]) == 1  # no second charge
    # the checkpoint is the first process's record, not rewritten
    assert [r["outcome"] for r in worker_checkpoints(db)] == ["committed"]


def test_without_a_checkpoint_the_derived_key_is_what_prevents_a_second_charge(
        tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    assert pay(db).returncode == 0
    with opened(db.with_name("worker.sqlite")) as state, immediate(state):
        state.execute("DELETE FROM checkpoints")  # as if killed before it
    again = pay(db)
    assert json.loads(again.stdout)["outcome"] == "already_committed"
    assert len(payments.snapshot(db)["payments"]) == 1
    mutant = pay(db, "--retry", "new-key")  # the same gap, a fresh key
    assert len(payments.snapshot(db)["payments"]) == 1  # it found the checkpoint
    assert json.loads(mutant.stdout)["outcome"] == "already_committed"


# --- guarantees (was tests/test_guarantees_store.py): each test defends one
# guarantee against the one-line bug named in its docstring


def paid_twice(tmp_path):
    service, state = tmp_path / "payments.sqlite", tmp_path / "worker.sqlite"
    payments.install(service)
    with store.opened(state) as conn:
        paying.install(conn)
        for order in ("o1", "o2"):
            payments.approve(service, order, 100, "USD")
            payments.issue_payment(service, f"k-{order}", order, 100, "USD")
            paying.save_checkpoint(conn, f"t-{order}", f"k-{order}", "committed")
    return service, state


def test_the_recount_is_a_second_read_not_the_snapshot_again(tmp_path, monkeypatch):
    """Bug: ``recount`` returns the lengths of ``snapshot``'s own lists, so a
    first read that lost rows is confirmed by the read meant to check it."""
    service, state = paid_twice(tmp_path)
    assert paying.recount(service, state) == {"payments": 2, "checkpoints": 2}
    # The first read now drops every row; the second must still see them.
    monkeypatch.setattr(payments, "snapshot",
                        lambda path: {"payments": [], "approvals": []})
    monkeypatch.setattr(paying, "checkpoints", lambda conn: [])
    monkeypatch.setattr(paying, "table_rows", lambda *args, **kwargs: [])
    assert paying.snapshot(service, state)["payments"] == []
    assert paying.recount(service, state) == {"payments": 2, "checkpoints": 2}


def test_the_recount_of_a_worker_killed_before_it_installed_is_zero(tmp_path):
    service, state = paid_twice(tmp_path)
    fresh = tmp_path / "fresh.sqlite"
    with store.opened(fresh):
        pass  # the worker's file exists, its tables were never made
    assert paying.recount(service, fresh) == {"payments": 2, "checkpoints": 0}
    with store.opened(fresh) as conn:
        assert paying.own_tables(conn) == set()  # the read created nothing


def started_both_ways(tmp_path, **changes):
    """The same payment run by ``pay_invoice.command`` and by ``python -m``,
    each on its own fresh service; both runs' (status, stdout, stderr) and
    both services' rows."""
    found = {}
    for how in ("command", "-m"):
        folder = tmp_path / how.strip("-")
        folder.mkdir(parents=True)
        service, state = folder / "payments.sqlite", folder / "worker.sqlite"
        payments.install(service)
        payments.approve(service, ORDER, AMOUNT, CURRENCY)
        line = pay_invoice.command(service, state, "restock-0042", ORDER, AMOUNT,
                                   CURRENCY)
        for option, value in changes.items():
            line[line.index(option) + 1] = value
        if how == "-m":
            line = ["-m", "crashcourse.workers.pay_invoice", *line[2:]]
        runs = [subprocess.run([sys.executable, *line], capture_output=True,
                               text=True, timeout=60) for _ in range(2)]
        found[how] = ([(r.returncode, r.stdout, r.stderr) for r in runs],
                      paying.recount(service, state) if state.exists() else None)
    return found


def test_the_command_runs_the_worker_as_python_m_would(tmp_path):
    """``command`` starts the worker without ``-m`` (``options.launch``); the
    run is the same: its report, its status, its rows, and its refusals name
    the program the same (fails when launch leaves ``sys.argv[0]`` as "-c")."""
    found = started_both_ways(tmp_path)
    assert found["command"] == found["-m"]
    assert [status for status, _, _ in found["command"][0]] == [0, 0]
    assert found["command"][1] == {"payments": 1, "checkpoints": 1}
    refused = started_both_ways(tmp_path / "bad", **{"--currency": "usd"})
    assert refused["command"] == refused["-m"]
    (status, _, said), _ = refused["command"][0]
    assert status == 2 and said.startswith("pay_invoice.py: error: ")


def test_the_command_does_not_load_runpy(tmp_path):
    """What ``command`` saves at every start: ``python -m``'s runpy (fails
    when command goes back to ``-m``)."""
    service = tmp_path / "payments.sqlite"
    payments.install(service)
    line = pay_invoice.command(service, tmp_path / "worker.sqlite", "t", ORDER,
                               AMOUNT, CURRENCY)
    done = subprocess.run([sys.executable, "-X", "importtime", *line],
                          capture_output=True, text=True, timeout=60)
    loaded = {row.rsplit("|", 1)[-1].strip() for row in done.stderr.splitlines()}
    assert "crashcourse.workers.pay_invoice" in loaded, done.stderr
    assert "runpy" not in loaded


@pytest.mark.parametrize("name", ["", "os; import shutil", "a..b", "1x"])
def test_launch_takes_a_module_name_only(name):
    with pytest.raises(ValueError):
        options.launch(name)


def test_a_resumed_workers_install_waits_for_no_writer(tmp_path):
    """Bug: ``paying.own_tables`` counts every table of the file (its
    ``name IN`` dropped): a state file holding one more table then never
    reads as installed, and every resumed worker's ``install`` opens a
    write transaction, waiting behind any writer of its file. The rule
    (chapter 02): tables made is one read. Deterministic: another
    connection holds the write lock; the install, with a busy timeout of
    0, must not need it."""
    state = tmp_path / "state.sqlite"
    with opened(state) as conn:
        paying.install(conn)
        conn.execute("CREATE TABLE notes (line TEXT)")  # one more of its own
    with opened(state) as writer, opened(state, busy_timeout_ms=0) as conn:
        with immediate(writer):
            paying.install(conn)  # busy at once if it asked for the lock
            assert paying.own_tables(conn) == set(paying.TABLES)


@pytest.mark.parametrize("boundary, charged, checkpointed", [
    ("before_payment", 0, 0), ("after_payment", 1, 0), ("after_checkpoint", 1, 1)])
def test_each_boundary_the_docstring_names_is_where_it_says(tmp_path, boundary,
                                                            charged, checkpointed):
    """Bug: a boundary the worker's docstring registers is left out (or
    moved past a write): a harness asked to kill there waits in vain, or
    kills after the write it meant to come before. Read from the rows."""
    from crashcourse.lab.harness import Harness

    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    state = tmp_path / "worker.sqlite"
    with Harness() as harness:
        running = harness.start(pay_invoice.command(db, state, order=ORDER),
                                stop_at=boundary)
        running.wait_for_boundary(timeout=60)
        running.kill()
    with opened(db) as conn:
        assert store.count_rows(conn, "payments") == charged
    assert len(worker_checkpoints(db)) == checkpointed
