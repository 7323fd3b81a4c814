"""WRONG ANSWER to exercise 09.1 (chapter 09): the decision stamped by the
wall clock, whatever instant it was given.

The mistake: ``set_switch`` stamps ``at`` with ``time.time()`` and ignores the
``now`` it was handed (checked, then dropped). The record of WHEN a person
decided is then the writer's clock at the call, not the instant the caller
said (a decision replayed from an operator's log, a test's clock).
Caught by ``test_a_decision_records_the_instant_it_was_given``.
"""


import time


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
        return conn.execute(
            "INSERT INTO job_switch (job, state, who, reason, at)"
            " VALUES (:job, :state, :who, :reason, :at)",
            {"job": job, "state": state, "who": who, "reason": reason,
             "at": time.time()},
        ).lastrowid
