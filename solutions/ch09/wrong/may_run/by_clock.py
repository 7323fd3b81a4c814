"""WRONG ANSWER to exercise 09.1: "newest" read as the largest ``at``. The
writer's wall clock can step back, so a stop written after a start can carry
an EARLIER stamp and be outranked by it; the order decisions were written in
is ``seq``. Caught by ``test_newest_means_last_written_not_latest_stamp``.
"""


def _newest(conn, job):
    return conn.execute("SELECT seq, state FROM job_switch WHERE job = :job"
                        " ORDER BY at DESC, seq DESC LIMIT 1", {"job": job}).fetchone()
