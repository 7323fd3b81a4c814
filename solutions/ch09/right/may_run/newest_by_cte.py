"""A correct answer in another shape: the newest decision read through a CTE
(``WITH ... SELECT``), under the same lock. The grader's trace must know it
for a read of the switch, not demand a statement that begins with SELECT."""


def _newest(conn, job):
    return conn.execute(
        "WITH decisions AS (SELECT seq, state FROM job_switch WHERE job = :job)"
        " SELECT seq, state FROM decisions"
        " WHERE seq = (SELECT max(seq) FROM decisions)", {"job": job}).fetchone()
