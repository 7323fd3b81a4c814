"""WRONG ANSWER to exercise 09.1 (chapter 09): the switch remembered in the
process.

The mistake: ``set_switch`` writes the row AND keeps the newest state in a
dict of the process's (an attribute of the function), which ``may_run``
reads. Within one process every test of its own calls agrees; a decision
written by another process (the person on the rota, a restarted scheduler)
is never seen, and a fresh process knows nothing at all.
Caught by ``test_a_decision_written_elsewhere_is_seen``.
"""


def set_switch(conn: sqlite3.Connection, job: str, state: str, who: str,
               reason: str = "", now: float | None = None) -> int:
    check_text("job", job)
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, got {state!r}")
    check_text("who", who)
    check_text("reason", reason, empty_ok=state == RUNNING)
    clock(now)
    install(conn)
    with immediate(conn):
        seq = conn.execute(
            "INSERT INTO job_switch (job, state, who, reason, at)"
            " VALUES (:job, :state, :who, :reason, :at)",
            {"job": job, "state": state, "who": who, "reason": reason,
             "at": clock(now)},
        ).lastrowid
    set_switch.remembered[job] = state
    return seq


def may_run(conn: sqlite3.Connection, job: str) -> bool:
    check_text("job", job)
    return set_switch.remembered.get(job) == RUNNING


set_switch.remembered = {}  # the process's memory of every switch
