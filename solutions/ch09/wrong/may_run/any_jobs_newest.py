"""WRONG ANSWER to exercise 09.1 (chapter 09): the run names the newest
decision of ANY job.

The mistake: ``allowed_by`` is ``max(seq)`` over the whole ``job_switch``
table. The run is allowed by its own job's decision; when another job's
switch was written since, the run points at a decision about something else,
and an audit of "who let this run start" reads the wrong person's reason.
Caught by ``test_a_run_names_its_own_jobs_decision``.
"""


def start_run(conn: sqlite3.Connection, job: str, scheduler: str,
              now: float | None = None) -> int | None:
    check_text("job", job)
    check_text("scheduler", scheduler)
    clock(now)
    install(conn)
    with immediate(conn):
        newest = _newest(conn, job)
        if newest is None or newest["state"] != RUNNING:
            return None
        latest = conn.execute("SELECT max(seq) FROM job_switch").fetchone()[0]
        return conn.execute(
            "INSERT INTO job_runs (job, scheduler, allowed_by, started_at)"
            " VALUES (:job, :scheduler, :allowed_by, :at)",
            {"job": job, "scheduler": scheduler, "allowed_by": latest,
             "at": clock(now)},
        ).lastrowid
