"""Chapter 11's crash-state explorer: the recording, the crash images, the
experiments. Real SQLite files, written through a recording VFS and opened
again with the standard sqlite3.

Each model test names the one-line bug it catches: an image that kept an
unsynced write, a deletion left out, a deletion made durable at once, a new
file that outlives a power cut with its folder never synced.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from crashcourse import boundary, store
from crashcourse import powerloss as pl
from crashcourse.powerloss import journal as pj
from crashcourse.powerloss import runs as pr
from crashcourse.powerloss.images import (
    PAGE,
    SCRATCH,
    SYNCED_ONLY,
    UNSYNCED_SUBSETS,
    Point,
    crash_states,
    explore,
    image_at,
    images,
    judge_database,
    possible,
)
from crashcourse.powerloss.vfs import (
    CREATE,
    DELETE,
    DIRSYNC,
    MARK,
    SYNC,
    TRUNCATE,
    WRITE,
    Event,
    Recorder,
)

FULL, NORMAL = pl.Mode("WAL", "FULL"), pl.Mode("WAL", "NORMAL")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder():
    """A fresh folder, in memory where the machine has a tmpfs: the recorded
    runs need the events, not the disk's fsyncs."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as made:
        yield Path(made)


def recorded(base: dict, *events: tuple) -> Recorder:
    """A hand-made run: files at the start and the events that followed."""
    recorder = Recorder(tempfile.gettempdir())
    recorder.base = dict(base)
    recorder.events = [Event(*event) for event in events]
    return recorder


def synced_images(recorder: Recorder) -> list[dict]:
    return [images(state, SYNCED_ONLY)[0] for state in crash_states(recorder)]


# --- the model, on hand-made runs ---------------------------------------------


def test_a_write_survives_only_once_its_file_is_synced():
    run = recorded({"db": b"AAAA"}, (WRITE, "db", 0, b"BB"), (SYNC, "db"),
                   (WRITE, "db", 2, b"CC"), (TRUNCATE, "db", 2))
    assert [image["db"] for image in synced_images(run)] == [
        b"AAAA", b"AAAA", b"BBAA", b"BBAA", b"BBAA"]


def test_a_new_file_needs_its_folder_synced():
    run = recorded({}, (CREATE, "db-wal"), (WRITE, "db-wal", 0, b"frame"),
                   (SYNC, "db-wal"), (DIRSYNC, "."))
    assert [image.get("db-wal") for image in synced_images(run)] == [
        None, None, None, None, b"frame"]


def test_an_unlink_comes_back_until_the_folder_is_synced():
    run = recorded({"db-journal": b"hot"}, (DELETE, "db-journal"), (DIRSYNC, "."))
    assert [image.get("db-journal") for image in synced_images(run)] == [
        b"hot", b"hot", None]


def test_a_name_made_again_is_a_new_file_once_the_folder_says_so():
    run = recorded({"j": b"old"}, (DELETE, "j"), (CREATE, "j"),
                   (WRITE, "j", 0, b"new"), (SYNC, "j"), (DIRSYNC, "."))
    assert [image["j"] for image in synced_images(run)] == [
        b"old", b"old", b"old", b"old", b"old", b"new"]


def test_subsets_are_every_combination_when_few_and_cut_at_the_grain():
    run = recorded({"db": bytes(1024)}, (WRITE, "db", 0, b"a" * 512 + b"b" * 512))
    *_, last = crash_states(run)
    sectors = {image["db"][::512]
               for image in images(last, UNSYNCED_SUBSETS, budget=16)}
    assert sectors == {b"\0\0", b"a\0", b"\0b", b"ab"}
    pages = {image["db"][::512]
             for image in images(last, UNSYNCED_SUBSETS, grain=PAGE)}
    assert pages == {b"\0\0", b"ab"}


def test_a_sample_is_seeded_and_holds_none_all_and_in_order_prefixes():
    run = recorded({"db": bytes(2048)}, (WRITE, "db", 0, b"x" * 1024),
                   (WRITE, "db", 1024, b"y" * 1024))
    *_, last = crash_states(run)
    assert possible(last) == 2 ** 4  # four sectors, each kept or not
    drawn = images(last, UNSYNCED_SUBSETS, budget=8, seed=3)
    assert len(drawn) == 8
    assert drawn == images(last, UNSYNCED_SUBSETS, budget=8, seed=3)
    sectors = {image["db"][::512] for image in drawn}
    assert {b"\0\0\0\0", b"xxyy"} <= sectors  # none, and all
    # a disk that wrote in order and stopped: the first one, two, three sectors
    assert {b"x\0\0\0", b"xx\0\0", b"xxy\0"} <= sectors


def test_pieces_are_in_the_order_they_were_made_across_files():
    run = recorded({"a": bytes(512), "b": bytes(512)}, (WRITE, "b", 0, b"1" * 512),
                   (WRITE, "a", 0, b"2" * 512), (WRITE, "b", 0, b"3" * 512))
    *_, last = crash_states(run)
    drawn = images(last, UNSYNCED_SUBSETS, budget=4, seed=0)  # 8 possible
    prefixes = [image for image in drawn if image not in (
        {"a": bytes(512), "b": bytes(512)}, {"a": b"2" * 512, "b": b"3" * 512})]
    assert {"a": bytes(512), "b": b"1" * 512} in prefixes  # b's first write only


def test_the_killed_image_keeps_every_write_and_unlink():
    run = recorded({"db": b"AAAA", "j": b"hot"}, (WRITE, "db", 4, b"BB"),
                   (DELETE, "j"), (MARK, "ack", 0, "k1"))
    assert image_at(run, 3, killed=True) == {"db": b"AAAABB"}
    assert image_at(run, 1, killed=True) == {"db": b"AAAABB", "j": b"hot"}
    assert image_at(run, 3) == {"db": b"AAAA", "j": b"hot"}  # a cut


# --- the recording VFS, on real SQLite runs -----------------------------------


def disk(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()
            if not p.name.endswith("-shm")}


@pytest.mark.parametrize("mode", [FULL, pl.Mode("DELETE", "FULL")], ids=str)
def test_replaying_every_event_gives_the_files_on_disk(folder, mode):
    """A write, truncation, creation or unlink the VFS missed would show here."""
    recorder = pl.service_run(folder, mode, 3)
    assert image_at(recorder, len(recorder.events), killed=True) == disk(folder)
    assert recorder.marked(pl.ACK) == [pl.payment_key(i) for i in range(3)]


def test_a_truncated_wal_replays_to_its_size_on_disk(folder):
    service = pl.set_up_service(folder, 1)
    with pl.recording(folder, {service.name: FULL}) as recorder:
        with store.opened(service) as conn:
            conn.execute("INSERT INTO approvals (order_id, amount_cents, currency)"
                         " VALUES ('order-9', 100, 'USD')")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            assert (folder / "payments.sqlite-wal").stat().st_size == 0
            assert image_at(recorder, len(recorder.events), killed=True) == disk(folder)
    assert (TRUNCATE, "payments.sqlite-wal") in [
        (e.kind, e.name) for e in recorder.events]


def kinds_before_first_ack(recorder: Recorder) -> list[tuple[str, str]]:
    first = next(i for i, e in enumerate(recorder.events) if e.kind == MARK)
    return [(e.kind, e.name) for e in recorder.events[:first]]


def test_full_syncs_the_wal_before_the_payment_returns_and_normal_does_not(folder):
    full = kinds_before_first_ack(pl.service_run(folder / "full", FULL, 1))
    normal = kinds_before_first_ack(pl.service_run(folder / "normal", NORMAL, 1))
    assert full[-1] == (SYNC, "payments.sqlite-wal")
    assert normal[-1] == (WRITE, "payments.sqlite-wal")  # the commit's frame
    assert (CREATE, "payments.sqlite-wal") in normal


@pytest.fixture(params=["DELETE+FULL", "DELETE+EXTRA"])
def delete_mode_run(request, folder):
    mode = pl.Mode(*request.param.split("+"))
    return mode, pl.service_run(folder, mode, 2)


def test_delete_mode_unlinks_its_journal_and_only_extra_syncs_the_folder(
        delete_mode_run):
    mode, recorder = delete_mode_run
    kinds = [(e.kind, e.name) for e in recorder.events]
    unlink = kinds.index((DELETE, "payments.sqlite-journal"))
    assert (CREATE, "payments.sqlite-journal") in kinds[:unlink]
    assert (kinds[unlink + 1][0] == DIRSYNC) is (mode.synchronous == "EXTRA")


def test_the_unsynced_unlink_of_a_journal_rolls_an_acknowledged_payment_back(
        delete_mode_run):
    """Deletions modelled: DELETE+FULL loses the last payment through the hot
    journal its unlink left; EXTRA syncs the unlink and loses none. Leaving
    deletions out, or making them durable at once, fails one of the two."""
    mode, recorder = delete_mode_run
    counted = pl.tally(recorder, explore(recorder, pl.judge_service))
    assert counted["corrupt"] == 0
    if mode.synchronous == "EXTRA":
        assert counted["acknowledged_lost"] == 0
    else:
        assert counted["acknowledged_lost"] > 0
        assert counted["first_loss"]["lost"] == [pl.payment_key(0)]


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_wal_full_loses_nothing_acknowledged_and_is_never_corrupt(folder, model):
    found = pl.service_case(folder, FULL, 3, model=model, budget=8)
    assert found["crash_points"] == sum(found["disk_calls"].values()) + 1
    assert (found["acknowledged_lost"], found["corrupt"]) == (0, 0)
    assert found["images"] > found["crash_points"] or model == SYNCED_ONLY


def test_wal_normal_loses_an_acknowledged_payment_a_kill_would_keep(folder):
    recorder = pl.service_run(folder, NORMAL, 2, autocheckpoint=None)
    points = explore(recorder, pl.judge_service)
    counted = pl.tally(recorder, points)
    assert counted["corrupt"] == 0 and counted["acknowledged_lost"] > 0
    # just after the second payment returned: a power cut there keeps neither
    # payment (nothing but the WAL's header was synced); a kill keeps both
    acked = max(p.point for p in points if p.event == MARK)
    assert points[acked].verdicts[0]["paid"] == []
    killed = Path(folder) / "killed"
    killed.mkdir()
    for name, data in image_at(recorder, acked, killed=True).items():
        (killed / name).write_bytes(data)
    assert pl.judge_service(killed)["paid"] == recorder.marked(pl.ACK) == [
        pl.payment_key(0), pl.payment_key(1)]


AS_SHIPPED = pl.Mode("WAL", pl.AS_OPENED)  # the level the runtime's code asks for


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_the_payment_service_as_shipped_syncs_before_it_returns(folder, model):
    """The runtime follows chapter 11: the service asks for FULL (record=True)
    and, held open, loses nothing acknowledged. Opening it at NORMAL (drop
    ``record=True`` in services.payments) fails here."""
    found = pl.service_case(folder, AS_SHIPPED, 3, model=model, budget=8)
    assert found["asked"] == {"payments.sqlite": ["FULL"]}
    assert (found["acknowledged_lost"], found["corrupt"]) == (0, 0)
    recorder = pl.service_run(folder / "again", AS_SHIPPED, 1)
    assert kinds_before_first_ack(recorder)[-1] == (SYNC, "payments.sqlite-wal")


def test_the_runtime_refuses_exactly_the_damaged_images(folder):
    """WAL+OFF tears the database; the service's own open (StoreDamaged, the
    integrity check of a system of record) refuses every image the judge
    finds corrupt, and none it finds sound. Skip the check in store.connect
    and the torn images are trusted: this fails."""
    found = pl.service_case(folder, pl.Mode("WAL", "OFF"), 3,
                            model=UNSYNCED_SUBSETS, budget=8)
    assert found["corrupt"] > 0
    assert found["refused"] == found["corrupt"]
    assert (found["trusted_corrupt"], found["refused_sound"]) == (0, 0)
    refusals = {seen["verdict"]["refused"] for point in found["points"]
                for seen in point["verdicts"] if seen["verdict"]["corrupt"]}
    assert refusals <= {"StoreDamaged", "StoreMissing"}


def test_the_service_called_per_call_is_saved_by_its_checkpoint_on_close(folder):
    found = pl.service_case(folder, NORMAL, 2, held_open=False)
    assert (found["acknowledged_lost"], found["corrupt"]) == (0, 0)
    assert found["disk_calls"][SYNC] >= 2  # the closes' checkpoints synced


def test_a_garbled_or_missing_database_is_corrupt(folder):
    path = folder / "db.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(500)])
    conn.close()
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    assert judge_database(path)["corrupt"] is True
    assert judge_database(folder / "none.sqlite") == {"corrupt": True,
                                                      "problems": ["missing"]}


def test_a_corrupt_image_is_counted_corrupt_and_never_as_a_loss():
    run = recorded({}, (MARK, "ack", 0, "k1"), (MARK, "ack", 0, "k2"))
    points = [Point(0, None, [{"corrupt": False, "paid": [], "double_charges": 0}]),
              Point(1, MARK, [{"corrupt": True, "problems": ["torn"]},
                              {"corrupt": False, "paid": [], "double_charges": 0}]),
              Point(2, MARK, [{"corrupt": False, "paid": ["k1"],
                               "double_charges": 1}])]
    assert pl.tally(run, points) == {
        "crash_points": 3, "sampled_points": 0, "images": 4, "acknowledged_lost": 2,
        "lost_payments": 2, "corrupt": 1, "double_charges": 1, "refused": 0,
        "refused_sound": 0, "trusted_corrupt": 0,
        "first_loss": {"point": 1, "lost": ["k1"], "acknowledged": 1}}


def test_the_runtime_s_refusals_are_counted_against_the_judge_s_verdicts():
    run = recorded({})
    sound, damaged = {"corrupt": False, "paid": [], "double_charges": 0}, {
        "corrupt": True}
    points = [Point(0, None, [{**damaged, "refused": "StoreDamaged"},
                              {**damaged, "refused": None},
                              {**sound, "refused": "StoreDamaged"},
                              {**sound, "refused": None}])]
    counted = pl.tally(run, points)
    assert (counted["refused"], counted["trusted_corrupt"],
            counted["refused_sound"]) == (2, 1, 1)


# --- recording: the runtime's own code, through apsw ------------------------


def test_recording_opens_through_the_vfs_and_leaves_other_files_alone(folder):
    pl.set_up_service(folder, 1)
    other = folder / "other.sqlite"
    with pytest.raises(RuntimeError), pl.recording(folder, {"payments.sqlite": FULL}):
        with store.opened(folder / "payments.sqlite") as conn:
            row = conn.execute("SELECT order_id, amount_cents FROM approvals"
                               " WHERE order_id = :order", {"order": "order-0"}
                               ).fetchone()
            assert dict(row) == {"order_id": "order-0", "amount_cents": 4000}
            assert row[0] == row["order_id"] == "order-0"
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute("INSERT INTO approvals (order_id, amount_cents,"
                             " currency) VALUES ('order-0', 1, 'USD')")
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        with store.opened(other) as conn:  # not named: the standard sqlite3
            assert isinstance(conn, sqlite3.Connection)
        raise RuntimeError("the block fails")
    with store.opened(folder / "payments.sqlite") as conn:  # plain sqlite3 again
        assert isinstance(conn, sqlite3.Connection)


def test_marking_hears_the_code_s_boundaries_only_inside_the_block(folder):
    recorder = Recorder(folder)
    with pytest.raises(RuntimeError), pr.marking(
            recorder, lambda name: ("seen", name) if name != "quiet" else None):
        boundary.boundary("after_payment")
        boundary.boundary("quiet")
        raise RuntimeError("the block fails")
    boundary.boundary("after_checkpoint")  # outside: not heard
    assert recorder.marked("seen") == ["after_payment"]


def test_the_runtime_never_imports_apsw():
    """Every module of crashcourse but the book-only powerloss ones imports
    without apsw; the book-only ones say so."""
    package = ROOT / "src" / "crashcourse"
    modules = sorted(
        "crashcourse." + ".".join(p.relative_to(package).with_suffix("").parts)
        for p in package.rglob("*.py") if p.name != "__init__.py"
        and "powerloss" not in p.relative_to(package).parts
        and p.stem != "powerloss")
    probe = ("import importlib, sys\n"
             f"for name in {modules!r}:\n"
             "    importlib.import_module(name)\n"
             "print('apsw' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
    for module in package.glob("powerloss*.py"):
        assert "BOOK-ONLY" in module.read_text().split('"""')[1]


# --- experiments 2 and 3 --------------------------------------------------------


def test_service_full_and_worker_normal_charge_once_and_lose_nothing(folder):
    found = pr.pay_then_checkpoint_case(folder, FULL, NORMAL, 2)
    assert (found["acknowledged_lost"], found["double_charges"],
            found["unpaid_after_resume"], found["corrupt"]) == (0, 0, 0, 0)
    assert found["paid_again"] > 0  # checkpoints were lost and paid again, once


def test_a_service_in_normal_loses_a_payment_the_worker_holds_done(folder):
    found = pr.pay_then_checkpoint_case(folder, NORMAL, FULL, 2)
    assert found["acknowledged_lost"] > 0 and found["unpaid_after_resume"] > 0
    assert found["double_charges"] == 0


def test_a_resume_under_a_new_key_is_counted_as_a_double_charge(folder, monkeypatch):
    recorder = pr.pay_then_checkpoint_run(folder, FULL, NORMAL, 2)
    monkeypatch.setattr(pr, "payment_key", lambda *action: "again-" + action[0])
    points = explore(recorder, lambda image: pr.resume_payments(image, 2))
    assert pl.tally(recorder, points)["double_charges"] > 0


def test_a_journal_in_normal_loses_intents_and_the_probe_runs_nothing_twice(folder):
    found = pj.journal_case(folder, NORMAL)
    assert found["acknowledged_lost"] > 0 and found["no_intent_for_done"] > 0
    assert (found["double_charges"], found["unfinished"], found["corrupt"]) == (0, 0, 0)
    assert found["first_loss"]["lost"][0].startswith("intent")


def test_a_blind_probe_lets_the_lost_intent_send_the_mail_twice(folder):
    """In NORMAL the sent mail's intent is lost with the journal's tail: the
    resume saw no doubt, asked a probe that cannot see, and sent again."""
    found = pj.journal_case(folder, NORMAL, actions=pj.blind_mail_actions)
    assert found["double_charges"] > 0
    assert found["twice_without_doubt"] > 0


def test_in_full_a_blind_probe_still_sends_twice_but_only_what_was_in_doubt(folder):
    """FULL keeps every intent, so each repeat is of the one step the journal
    held in doubt (a SIGKILL there does the same); none comes from nowhere."""
    found = pj.journal_case(folder, FULL, actions=pj.blind_mail_actions)
    assert found["double_charges"] > 0
    assert (found["twice_without_doubt"], found["acknowledged_lost"]) == (0, 0)


def test_the_journal_s_images_are_refused_exactly_when_damaged(folder):
    found = pj.journal_case(folder, NORMAL, model=UNSYNCED_SUBSETS, budget=6)
    assert (found["refused_sound"], found["trusted_corrupt"]) == (0, 0)


def test_a_journal_in_full_loses_no_commit(folder):
    found = pj.journal_case(folder, FULL)
    assert (found["acknowledged_lost"], found["no_intent_for_done"],
            found["double_charges"]) == (0, 0, 0)


def test_the_commit_cost_is_measured_for_both_levels(tmp_path):
    cost = pr.commit_cost(tmp_path, commits=3, rounds=2)
    assert set(cost) == {"FULL", "NORMAL"}
    assert all(len(c["rounds_us"]) == 2 and c["us_per_commit"] > 0
               for c in cost.values())


# --- the chapter's figures ------------------------------------------------------


def test_a_point_shows_the_worst_of_its_images():
    from crashcourse.figures.powerloss import CORRUPT, KEPT, LOST, point_outcome

    def point(*verdicts, acknowledged=("k1",)):
        return {"acknowledged": list(acknowledged),
                "verdicts": [{"verdict": v, "images": 1} for v in verdicts]}

    kept = {"corrupt": False, "paid": ["k1"]}
    lost = {"corrupt": False, "paid": []}
    assert point_outcome(point(kept)) == KEPT
    assert point_outcome(point(kept, lost)) == LOST
    assert point_outcome(point(lost, {"corrupt": True})) == CORRUPT
    assert point_outcome(point(lost, acknowledged=())) == KEPT  # nothing owed yet


def facecolours(ax) -> list[str]:
    from matplotlib.colors import to_hex

    return [to_hex(patch.get_facecolor()) for patch in ax.patches]


def test_the_strips_colour_each_point_by_its_outcome():
    from crashcourse.figures.powerloss import OUTCOME_COLOURS, crash_outcomes

    fig = crash_outcomes({"run": ["kept", "lost", "corrupt"]}, {"run": [1]})
    assert facecolours(fig.axes[0]) == [OUTCOME_COLOURS[o].lower()
                                        for o in ("kept", "lost", "corrupt")]


def test_the_timeline_shows_normal_s_commit_not_yet_durable(folder):
    from matplotlib.colors import to_hex

    from crashcourse.figures import COLOURS
    from crashcourse.figures.powerloss import disk_timeline

    panels = {}
    for mode in (FULL, NORMAL):
        run = pl.service_run(folder / str(mode), mode, 2, autocheckpoint=None)
        first, second = [i for i, e in enumerate(run.events, start=1) if e.kind == MARK]
        panels[str(mode)] = run.events[first:second]
    fig = disk_timeline(panels)
    squares = [{to_hex(line.get_color()) for line in ax.lines
                if line.get_marker() == "s"} for ax in fig.axes]
    assert squares == [{COLOURS["ok"]}, {COLOURS["doubt"]}]


# --- issue 23: a recorded connection is set up as store.connect sets one up ------


@pytest.mark.parametrize("autocheckpoint, pages", [(None, 1000), (7, 7)])
def test_a_recorded_connection_is_set_up_as_store_connect_sets_one_up(
        tmp_path, autocheckpoint, pages):
    """Bugs: ``open_recorded`` without its busy timeout or its foreign keys,
    or with ``autocheckpoint is None`` inverted (SQLite reads
    ``wal_autocheckpoint=None`` as 0: never checkpoint). The code under test
    must run on the recorded disk as it runs on the real one."""
    name = "x.sqlite"
    with pl.recording(tmp_path, {name: pl.Mode("WAL", "FULL")},
                             autocheckpoint=autocheckpoint):
        with store.opened(tmp_path / name) as conn:
            seen = {pragma: conn.execute(f"PRAGMA {pragma}").fetchone()[0]
                    for pragma in ("busy_timeout", "foreign_keys",
                                   "wal_autocheckpoint", "journal_mode")}
    assert seen == {"busy_timeout": store.DEFAULT_BUSY_TIMEOUT_MS,
                    "foreign_keys": 1, "wal_autocheckpoint": pages,
                    "journal_mode": "wal"}


def test_an_outcome_counts_as_committed_once_the_next_intent_or_the_end_is():
    """Bug: ``committed`` asks for the next step's intent AND the run's end
    (``and`` for ``or``): before the end no outcome counts as acknowledged,
    and an image that lost one is judged sound. One commit per step: step
    N's outcome commits with step N+1's intent, the last one at the end."""
    class Marks:  # the recorder's marks, each at its event's index
        def __init__(self, marks):
            self.marks = marks

        def marked(self, label, upto=None):
            return [name for at, (kind, name) in enumerate(self.marks)
                    if kind == label and (upto is None or at < upto)]

    marks = Marks([(pj.INTENT, "1"), (pj.INTENT, "2"), (pj.INTENT, "3"),
                   (pj.FINISHED, "task")])
    assert pj.committed(marks, 3) == ({1, 2, 3}, {1, 2})
    assert pj.committed(marks, 4) == ({1, 2, 3}, {1, 2, 3})
    assert pj.committed(marks, 1) == ({1}, set())
