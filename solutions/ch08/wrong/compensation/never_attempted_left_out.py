"""WRONG ANSWER to exercise 08.3 (chapter 08): only attempted steps listed.

The mistake: the plan lists only the steps that were attempted, as the
runtime's ``compensations`` table does (``compensate`` writes no row for a
step never attempted, or refused by its service). Every entry it gives is
right. But the plan is what the person reads, and a step missing from it
reads as "forgotten", not as "nothing to undo": the cancelled workflow's
plan must account for every step. Caught by
``test_the_plan_is_what_the_runtime_then_does`` in every case with a step
never attempted or refused.
"""


from crashcourse.workflow.steps import (
    DONE,
    IN_DOUBT,
    NOT_DONE,
    NOT_STARTED,
)


def compensation_plan(conn: sqlite3.Connection, workflow_id: str,
                      probed: dict | None = None, now: float | None = None
                      ) -> list[dict]:
    """What each step of a cancelled (or failed) workflow needs, from its
    rows, the lease clock (``now``, else the store's) and the probes of the
    steps that need one; writes nothing (chapter 08)."""
    state = workflow.read(conn, workflow_id)["state"]  # KeyError if unknown
    if state not in (workflow.CANCELLED, workflow.FAILED):
        raise ValueError(f"workflow {workflow_id!r} is {state}: no compensation")
    at = store.now(conn, now)
    steps = workflow_steps.progress(conn, workflow_id)
    doubt = {s["step"]: fate_in_doubt(s, at) for s in steps
             if s["status"] == IN_DOUBT}
    answers = check_probed(probed, set(doubt),
                           {name for name, fate in doubt.items() if fate is None})
    plan = []
    for step in steps:
        name, key = step["step"], step["operation_key"]
        if step["status"] in (NOT_STARTED, NOT_DONE):
            continue  # never attempted, or refused: no effect to undo
        if doubt.get(name) is not None:
            action, status = doubt[name]  # the rows say, whatever a probe does
        elif step["status"] == DONE or answers.get(name, False):
            action, status = UNDO[name]
        elif name in doubt and name not in FENCED:
            action, status = WAIT  # "not found" is "not yet": it may still land
        else:
            action, status = NOTHING
        undo_key = None
        if action == "released":
            undo_key = operation_key(workflow_id, name, "release", {"order": key})
        plan.append({"step": name, "operation_key": key, "action": action,
                     "status": status, "compensation_key": undo_key,
                     "note": NOTES[action]})
    return plan
