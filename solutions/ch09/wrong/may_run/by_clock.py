""""newest" read as the largest ``at``. Caught by
``test_newest_means_last_written_not_latest_stamp``."""


def _newest(conn, job):
    return conn.execute("SELECT seq, state FROM job_switch WHERE job = :job"
                        " ORDER BY at DESC, seq DESC LIMIT 1", {"job": job}).fetchone()
