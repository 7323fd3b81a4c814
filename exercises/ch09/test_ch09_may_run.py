"""Grades exercise 09.1 (may_run.py): the scheduler stays stopped by default."""

import math
import sqlite3
import subprocess
import sys

import pytest

from crashcourse.store import connect, immediate, opened

SYNC, RESTOCK = "supplier-sync", "restock"
T0 = 1_700_000_000.0
# The rival's stop is committed from another connection just before one of
# start_run's statements, each in turn, as the connection's trace callback
# sees them (conn.execute, a cursor's execute, executemany, executescript,
# a trigger's statements): no regex says which statement reads the switch,
# so a switch read in any shape, from any table, is judged by the rows alone.
MAX_STATEMENTS = 200  # more in one start_run is a loop, not a scheduler


@pytest.fixture
def mod(answer):
    return answer("ch09", "may_run")


@pytest.fixture
def conn(tmp_path):
    with opened(tmp_path / "runtime.sqlite") as conn:
        yield conn


def switch_rows(conn):
    made = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'job_switch'")
    if made.fetchone() is None:
        return []
    return [tuple(r) for r in conn.execute(
        "SELECT job, state, who, reason FROM job_switch ORDER BY seq")]


def may(mod, conn, job, expected, why):
    """``may_run`` answers ``expected`` (a bool); ``why`` says the mistake."""
    said = mod.may_run(conn, job)
    assert said is expected, f"{why}: may_run({job!r}) answered {said!r}"


def no_run(mod, conn, job, scheduler, why, now=None):
    """``start_run`` starts nothing (None); ``why`` says the mistake."""
    said = mod.start_run(conn, job, scheduler, now=now)
    assert said is None, (
        f"{why}: start_run({job!r}) started run {said!r}; runs {runs(conn)}")


def runs(conn):
    return [dict(r) for r in conn.execute("SELECT * FROM job_runs ORDER BY run_id")]


def test_nobody_has_looked_so_nothing_runs(mod, conn):
    may(mod, conn, SYNC, False, "with no decision at all the job was let run:"
        " stopped is the default, only a person's 'running' starts it")
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    assert tables == 0, (  # asking is a read: it creates nothing
        f"asking may_run created {tables} tables: asking is a read")
    mod.install(conn)  # the tables exist, and still nobody has said "run"
    may(mod, conn, SYNC, False, "with the tables made and no decision the job was"
        " let run: stopped is the default")
    no_run(mod, conn, SYNC, "scheduler-1", "nobody said 'running' and a run"
           " started: the scheduler may not give itself the permission")
    assert runs(conn) == [], f"with no decision runs were written: {runs(conn)}"


def test_the_newest_decision_rules(mod, conn):
    first = mod.set_switch(conn, SYNC, mod.RUNNING, "ana", "nightly sync on")
    may(mod, conn, SYNC, True, "after ana's 'running' the job was kept stopped")
    second = mod.set_switch(conn, SYNC, mod.STOPPED, "ana", "supplier outage")
    may(mod, conn, SYNC, False, "after ana's stop, the newest decision, the job"
        " was let run")
    third = mod.set_switch(conn, SYNC, mod.RUNNING, "ben")  # a start needs no reason
    assert first < second < third, (
        "set_switch's answers are not in the order the decisions were written:"
        f" {first}, {second}, {third}")
    may(mod, conn, SYNC, True, "after ben's 'running', the newest decision, the"
        " job was kept stopped")
    expected = [(SYNC, "running", "ana", "nightly sync on"),
                (SYNC, "stopped", "ana", "supplier outage"),
                (SYNC, "running", "ben", "")]
    assert switch_rows(conn) == expected, (
        "the switch does not keep every decision, in order, with who and why:"
        f" {switch_rows(conn)}, expected {expected}")


def test_each_job_has_its_own_switch(mod, conn):
    mod.set_switch(conn, SYNC, mod.RUNNING, "ana")
    mod.set_switch(conn, RESTOCK, mod.RUNNING, "ana")
    mod.set_switch(conn, SYNC, mod.STOPPED, "ana", "supplier outage")
    mod.set_switch(conn, RESTOCK, mod.RUNNING, "ben", "new shelf plan")  # newest row
    said = (mod.may_run(conn, SYNC), mod.may_run(conn, RESTOCK))
    assert said == (False, True), (
        "the jobs do not each follow their own newest decision (sync stopped,"
        f" restock running): may_run answered {said}")
    no_run(mod, conn, SYNC, "scheduler-1", "the stopped sync started a run")
    started = mod.start_run(conn, RESTOCK, "scheduler-1")
    assert started is not None, (
        "the running restock started no run: its own newest decision is"
        " 'running', whatever the sync's is")
    may(mod, conn, "inventory-count", False,  # never switched on
        "a job nobody ever switched on was let run: stopped is the default")


def test_newest_means_last_written_not_latest_stamp(mod, conn):
    """The clock steps back 60 s (an NTP correction) between the start and the
    stop: the stop is still the newest decision."""
    mod.set_switch(conn, SYNC, mod.RUNNING, "ana", now=T0 + 100)
    mod.set_switch(conn, SYNC, mod.STOPPED, "ben", "duplicate orders", now=T0 + 40)
    later = ("the stop was written after the start but stamped earlier, and the"
             " start won: newest is the order written (seq), not the clock's stamp")
    may(mod, conn, SYNC, False, later)
    no_run(mod, conn, SYNC, "scheduler-1", later, now=T0 + 120)
    mod.set_switch(conn, SYNC, mod.RUNNING, "ben", "fixed", now=T0 + 10)
    may(mod, conn, SYNC, True, "ben's start, written last with the earliest"
        " stamp, did not win: newest is the order written, not the stamp")


def test_a_run_names_its_own_jobs_decision(mod, conn):
    """Another job's switch written after this job's: the run still names the
    decision about ITS job."""
    own = mod.set_switch(conn, SYNC, mod.RUNNING, "ana", now=T0)
    mod.set_switch(conn, RESTOCK, mod.RUNNING, "ben", now=T0 + 1)
    mod.set_switch(conn, RESTOCK, mod.STOPPED, "ben", "shelf move", now=T0 + 2)
    run_id = mod.start_run(conn, SYNC, "scheduler-1", now=T0 + 3)
    got = [(r["run_id"], r["allowed_by"]) for r in runs(conn)]
    assert got == [(run_id, own)], (
        "the run does not name its own job's decision: another job's switch"
        " was written since, and allowed_by must be the newest decision about"
        f" THIS job; (run_id, allowed_by) {got}, expected {[(run_id, own)]}")


def test_a_decision_records_the_instant_it_was_given(mod, conn):
    mod.set_switch(conn, SYNC, mod.RUNNING, "ana", now=T0)
    mod.set_switch(conn, SYNC, mod.STOPPED, "ben", "outage", now=T0 - 30)
    stamps = [r[0] for r in conn.execute("SELECT at FROM job_switch ORDER BY seq")]
    assert stamps == [T0, T0 - 30], (
        "the decisions are not stamped with the instant they were given (now),"
        f" but some other clock: at {stamps}, expected {[T0, T0 - 30]}")


ASK_IN_A_FRESH_PROCESS = """
import importlib.util, json, sys
from crashcourse.store import opened
spec = importlib.util.spec_from_file_location("answer", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
with opened(sys.argv[2]) as conn:
    print(json.dumps([mod.may_run(conn, job) for job in sys.argv[3:]]))
"""


def test_a_decision_written_elsewhere_is_seen(mod, conn, tmp_path):
    """The switch is the table's, not the process's: a decision the person on
    the rota wrote from another connection is what this process sees, and a
    fresh process (a restarted scheduler) sees this process's decisions."""
    mod.install(conn)
    mod.set_switch(conn, RESTOCK, mod.RUNNING, "ana")
    rival = connect(tmp_path / "runtime.sqlite")
    try:
        for state in ("running", "stopped"):
            with immediate(rival):
                rival.execute("INSERT INTO job_switch (job, state, who, reason, at)"
                              " VALUES (:job, :state, 'ben', 'rota', 0)",
                              {"job": SYNC, "state": state})
            may(mod, conn, SYNC, state == "running",
                f"ben's '{state}', written from another connection, was not"
                " seen: read the switch from the table, not from memory")
    finally:
        rival.close()
    no_run(mod, conn, SYNC, "scheduler-1", "ben's stop, written from another"
           " connection, did not stop the run: read the switch from the table")
    asked = subprocess.run(
        [sys.executable, "-c", ASK_IN_A_FRESH_PROCESS, mod.__file__,
         str(tmp_path / "runtime.sqlite"), SYNC, RESTOCK],
        capture_output=True, text=True, timeout=60)
    assert asked.returncode == 0, (
        "asking may_run in a fresh process failed (exit"
        f" {asked.returncode}): {asked.stderr[-2000:]}")
    said = asked.stdout.split()
    assert said == ["[false,", "true]"], (
        "a fresh process (a restarted scheduler) does not see the decisions in"
        " the table (sync stopped, restock running): read them from the"
        f" table, not from memory; it answered {asked.stdout.strip()!r}")


def test_a_run_names_the_decision_that_allowed_it(mod, conn, tmp_path):
    allowed = mod.set_switch(conn, SYNC, mod.RUNNING, "ana", now=T0)
    run_id = mod.start_run(conn, SYNC, "scheduler-1", now=T0 + 5)
    got = [(r["run_id"], r["job"], r["scheduler"], r["allowed_by"], r["started_at"])
           for r in runs(conn)]
    expected = [(run_id, SYNC, "scheduler-1", allowed, T0 + 5)]
    assert got == expected, (
        "the run's row does not say which decision allowed it, who ran it and"
        f" when: {got}, expected {expected}")
    mod.set_switch(conn, SYNC, mod.STOPPED, "ana", "incident 0342", now=T0 + 6)
    with opened(tmp_path / "runtime.sqlite") as restarted:  # the scheduler restarts
        for _ in range(2):
            no_run(mod, restarted, SYNC, "scheduler-2", "after ana's stop a"
                   " restarted scheduler started a run")
    assert len(runs(conn)) == 1, (
        f"runs were written after the stop: {runs(conn)}")


@pytest.mark.parametrize(("args", "error"), [
    ((SYNC, "stopped", "ana", ""), ValueError),  # a stop needs a reason
    ((SYNC, "stopped", "ana", "   "), ValueError),
    ((SYNC, "paused", "ana", "why not"), ValueError),  # not a state
    ((SYNC, "running", "", "go"), ValueError),  # nobody decided
    (("", "running", "ana", "go"), ValueError),  # no job
    ((SYNC, "running", None, "go"), ValueError),
], ids=["stop-without-reason", "blank-reason", "unknown-state", "blank-who",
        "blank-job", "who-not-text"])
def test_bad_decisions_are_refused_and_nothing_written(mod, conn, args, error):
    mod.install(conn)
    with pytest.raises(error):
        got = mod.set_switch(conn, *args)
        pytest.fail(f"the bad decision {args} was accepted (answered {got!r})"
                    f" instead of a {error.__name__}")
    assert switch_rows(conn) == [], (
        f"the refused decision {args} wrote rows: {switch_rows(conn)}")
    may(mod, conn, SYNC, False, f"after the refused decision {args} the job was"
        " let run")


@pytest.mark.parametrize("now", ["soon", math.nan], ids=["text", "nan"])
def test_a_bad_instant_is_refused_and_nothing_written(mod, conn, now):
    with pytest.raises(ValueError):
        got = mod.set_switch(conn, SYNC, mod.RUNNING, "ana", now=now)
        pytest.fail(f"a decision stamped now={now!r} was accepted (answered"
                    f" {got!r}) instead of a ValueError")
    assert switch_rows(conn) == [], (
        f"the decision refused for now={now!r} wrote rows: {switch_rows(conn)}")


def start_with_a_stop_before(mod, path, statement: int) -> tuple[dict, int, list]:
    """On a fresh file with the job running, ``start_run`` with the person on
    the rota stopping the job from another connection just before its
    ``statement``-th statement (0: the first). What the stop did (committed
    or refused as busy, and whether a run was already committed when it
    tried), how many statements start_run ran, and the runs."""
    with opened(path) as conn:
        mod.set_switch(conn, SYNC, mod.RUNNING, "ana")
        ran, stop = [], {}

        def person_stops_the_job(sql: str) -> None:
            ran.append(sql)
            if len(ran) != statement + 1:
                return
            rival = connect(path, busy_timeout_ms=200)
            try:
                with immediate(rival):
                    before = rival.execute("SELECT count(*) FROM job_runs")
                    stop["runs_before"] = before.fetchone()[0]
                    rival.execute(
                        "INSERT INTO job_switch (job, state, who, reason, at)"
                        " VALUES (:job, 'stopped', 'ben', 'supplier outage', 0)",
                        {"job": SYNC})
                stop["committed"] = True
            except sqlite3.OperationalError:  # locked: the scheduler holds it
                stop["committed"] = False
            finally:
                rival.close()

        conn.set_trace_callback(person_stops_the_job)
        try:
            mod.start_run(conn, SYNC, "scheduler-1")
        except sqlite3.OperationalError:
            pass  # a write refused as busy started nothing: the rows tell
        finally:
            conn.set_trace_callback(None)
        return stop, len(ran), runs(conn)


def test_no_run_slips_in_after_a_stop(mod, tmp_path):
    """The person on the rota stops the job from another connection just
    before each of start_run's statements in turn (a fresh file each time),
    until start_run ends before the stop's turn. A stop that commits before
    any run is committed leaves no run, whatever statement it came before:
    if the switch was read outside the run's write lock (check, then
    insert), the stop slips in between and a run follows it. A stop refused
    because the scheduler held the write lock leaves the job running, and
    then exactly one run is written."""
    for statement in range(MAX_STATEMENTS):
        stop, ran, started = start_with_a_stop_before(
            mod, tmp_path / f"runtime-{statement}.sqlite", statement)
        if not stop:  # start_run ended before this statement: all were tried
            assert statement > 0, "start_run ran no statement at all"
            return
        if stop["committed"] and stop["runs_before"] == 0:
            assert started == [], (
                f"a run started after a stop committed just before statement"
                f" {statement + 1} of {ran}: the switch was read outside the"
                f" run's write lock, so the stop slipped in between; runs {started}")
        elif not stop["committed"]:
            assert len(started) == 1, (
                f"the scheduler held the write lock at statement {statement + 1}"
                f" (the stop waited) and did not write one run: runs {started}")
    pytest.fail(f"start_run ran more than {MAX_STATEMENTS} statements")
