"""No decision means "run" (the switch a brake to pull, not a permission to give);
``start_run`` even writes the default down as the scheduler's own start. Caught by
``test_nobody_has_looked_so_nothing_runs`` and ``test_each_job_has_its_own_switch``."""


def allows(newest):
    return newest is None or newest["state"] == RUNNING  # only a stop stops


def record_run(conn, job, scheduler, newest, now, _reference=record_run):  # noqa: F821
    if newest is None:  # nobody said stop: the scheduler notes its default
        newest = {"seq": conn.execute(
            "INSERT INTO job_switch (job, state, who, reason, at)"
            f" VALUES (:job, '{RUNNING}', :scheduler, 'default', :at)",
            {"job": job, "scheduler": scheduler, "at": clock(now)}).lastrowid}
    return _reference(conn, job, scheduler, newest, now)
