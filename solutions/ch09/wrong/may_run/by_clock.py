"""WRONG ANSWER to exercise 09.1 (chapter 09): the newest stamp rules.

The mistake: "newest" is read as the largest ``at``. The stamps come from the
writer's wall clock, which can step back (an NTP correction, a laptop whose
clock lags), so a stop written after a start can carry an EARLIER stamp and
be outranked by the start it was meant to overrule: the job runs on after
the person stopped it. The order decisions were written in is ``seq``.
Caught by ``test_newest_means_last_written_not_latest_stamp``.
"""


def _newest(conn: sqlite3.Connection, job: str):
    """The job's latest decision by its stamp, or None."""
    return conn.execute(
        "SELECT seq, state FROM job_switch"
        " WHERE job = :job"
        " ORDER BY at DESC, seq DESC LIMIT 1",
        {"job": job},
    ).fetchone()
