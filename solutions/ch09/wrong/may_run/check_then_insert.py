"""WRONG ANSWER to exercise 09.1 (chapter 09): check first, insert afterwards.

The mistake: ``start_run`` asks ``may_run`` (a read, outside any
transaction) and then inserts the run in a transaction of its own. Alone it
behaves; but a stop committed by another connection between the check and
the insert is never seen, and a run starts AFTER the person stopped the job.
Caught by ``test_no_run_slips_in_after_a_stop``, which commits that stop
just before the run's row is written.
"""


def start_run(conn: sqlite3.Connection, job: str, scheduler: str,
              now: float | None = None) -> int | None:
    """Start one run of ``job`` if its switch allows it: the run's id, or None.

    The switch is read under the same write lock as the run's insert, so a
    stop that committed first is always seen."""
    check_text("job", job)
    check_text("scheduler", scheduler)
    clock(now)
    install(conn)
    if not may_run(conn, job):
        return None  # stopped, or nobody has looked: stay stopped
    newest = _newest(conn, job)
    with immediate(conn):  # the switch was read above, outside this lock
        return conn.execute(
            "INSERT INTO job_runs (job, scheduler, allowed_by, started_at)"
            " VALUES (:job, :scheduler, :allowed_by, :at)",
            {"job": job, "scheduler": scheduler, "allowed_by": newest["seq"],
             "at": clock(now)},
        ).lastrowid
