"""``start_run`` asks ``may_run`` (a read, outside any transaction), then inserts the
run in a transaction of its own: a stop committed between the two is never seen. Caught
by ``test_no_run_slips_in_after_a_stop``."""


def start_run(conn, job, scheduler, now=None):
    check_text("job", job)
    check_text("scheduler", scheduler)
    clock(now)
    install(conn)
    if not may_run(conn, job):
        return None
    newest = _newest(conn, job)
    with immediate(conn):  # the switch was read above, outside this lock
        return record_run(conn, job, scheduler, newest, now)
