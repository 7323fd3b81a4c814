"""WRONG ANSWER to exercise 08.3 (chapter 08): after the lease, "not found"
is final (the rule before issue 29).

The mistake: the lease is taken as the end of the holder's window. An
admitted call is waited for while its lease is live, at every service, and
after it a probe that finds nothing is written off as nothing to undo. But
a lease bounds nothing about a pause: a holder SIGSTOPped after its
admission sends its mail, or charges, once it is thawed, and the plan (like
the runtime before issue 29) says "nothing to undo" for ever. And at the
supplier, fenced before the probe, the wait is for nothing: "no such order"
is final at once. Caught by
``test_the_plan_is_what_the_runtime_then_does[killed:admitted:reserve]`` and
``test_after_the_lease_the_probe_decides``.
"""


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    admitted = [a for a in step["attempts"] if a["admitted_at"] is not None]
    if not admitted:
        return NOTHING
    if max(a["expires"] for a in admitted) > at:  # the fence is not looked at
        return WAIT
    return None


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
        if doubt.get(name) is not None:
            action, status = doubt[name]  # the rows say, whatever a probe does
        elif step["status"] == DONE or answers.get(name, False):
            action, status = UNDO[name]
        else:  # not found: nothing to undo, whatever the service
            action, status = NOTHING
        undo_key = None
        if action == "released":
            undo_key = operation_key(workflow_id, name, "release", {"order": key})
        plan.append({"step": name, "operation_key": key, "action": action,
                     "status": status, "compensation_key": undo_key,
                     "note": NOTES[action]})
    return plan
