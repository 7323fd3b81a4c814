"""WRONG ANSWER to exercise 09.1 (chapter 09): no decision means "run".

The mistake: a job nobody has switched yet may run, as if the switch were a
brake to pull rather than a permission to give; ``start_run`` even writes
the default down as a start by the scheduler itself. A scheduler started on
a fresh or forgotten file (or after the switch table was lost) starts runs
that no person allowed. Caught by ``test_nobody_has_looked_so_nothing_runs``
and ``test_each_job_has_its_own_switch`` (a job never switched on).
"""


def may_run(conn: sqlite3.Connection, job: str) -> bool:
    """Whether the job's newest decision says running. A read: no table or no
    row means nobody has said "run", and the answer is no."""
    check_text("job", job)
    made = conn.execute("SELECT 1 FROM sqlite_master"
                        " WHERE type = 'table' AND name = 'job_switch'").fetchone()
    newest = _newest(conn, job) if made else None
    return newest is None or newest["state"] == RUNNING  # only a stop stops


def start_run(conn: sqlite3.Connection, job: str, scheduler: str,
              now: float | None = None) -> int | None:
    """Start one run of ``job`` if its switch allows it: the run's id, or None.

    The switch is read under the same write lock as the run's insert, so a
    stop that committed first is always seen."""
    check_text("job", job)
    check_text("scheduler", scheduler)
    clock(now)
    install(conn)
    with immediate(conn):
        newest = _newest(conn, job)
        if newest is not None and newest["state"] != RUNNING:
            return None  # a person stopped it
        if newest is None:  # nobody said stop: the scheduler notes its default
            newest = {"seq": conn.execute(
                "INSERT INTO job_switch (job, state, who, reason, at)"
                f" VALUES (:job, '{RUNNING}', :scheduler, 'default', :at)",
                {"job": job, "scheduler": scheduler, "at": clock(now)}).lastrowid}
        return conn.execute(
            "INSERT INTO job_runs (job, scheduler, allowed_by, started_at)"
            " VALUES (:job, :scheduler, :allowed_by, :at)",
            {"job": job, "scheduler": scheduler, "allowed_by": newest["seq"],
             "at": clock(now)},
        ).lastrowid
