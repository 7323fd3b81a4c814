"""``set_switch`` writes the row AND keeps the newest state in the process's memory,
which ``may_run`` reads: a decision written by another process is never seen, and a
fresh process knows nothing. Caught by ``test_a_decision_written_elsewhere_is_seen``."""


def set_switch(conn, job, state, who, reason="", now=None,
               _reference=set_switch):  # noqa: F821
    seq = _reference(conn, job, state, who, reason, now)
    set_switch.remembered[job] = state
    return seq


set_switch.remembered = {}  # the process's memory of every switch


def may_run(conn, job):
    check_text("job", job)
    return set_switch.remembered.get(job) == RUNNING
