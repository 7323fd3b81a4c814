"""``allowed_by`` is ``max(seq)`` over the whole ``job_switch`` table: when another
job's switch was written since, the run names a decision about something else. Caught by
``test_a_run_names_its_own_jobs_decision``."""


def record_run(conn, job, scheduler, newest, now, _reference=record_run):  # noqa: F821
    latest = conn.execute("SELECT max(seq) FROM job_switch").fetchone()[0]
    return _reference(conn, job, scheduler, {"seq": latest}, now)  # any job's
