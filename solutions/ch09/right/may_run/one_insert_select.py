"""A correct answer in another shape: the run started by ONE ``INSERT ...
SELECT`` that reads the newest decision and writes the run in the same
statement, so nothing can come between the two."""


def start_run(conn, job, scheduler, now=None):
    check_text("job", job)
    check_text("scheduler", scheduler)
    at = clock(now)
    install(conn)
    with immediate(conn):
        started = conn.execute(
            "INSERT INTO job_runs (job, scheduler, allowed_by, started_at)"
            " SELECT job, :scheduler, seq, :at FROM job_switch"
            " WHERE seq = (SELECT max(seq) FROM job_switch WHERE job = :job)"
            f" AND state = '{RUNNING}'",
            {"job": job, "scheduler": scheduler, "at": at})
        return started.lastrowid if started.rowcount == 1 else None
