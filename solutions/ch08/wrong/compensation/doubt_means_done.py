"""WRONG ANSWER to exercise 08.3 (chapter 08): in doubt means it happened.

The mistake: a step in doubt is planned like a step done, "to be safe": its
attempt row is there, so its effect is assumed and its undo planned. The
probe answers are still demanded and checked, then not used. When the
worker was killed after the attempt and before the call, the supplier has no
such order: the plan asks for a release of nothing, where the runtime
writes ``nothing_to_undo``. Caught by
``test_the_plan_is_what_the_runtime_then_does[killed:before_remote:reserve]``
and ``test_after_the_lease_the_probe_decides``.
"""


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
    check_probed(probed, set(doubt),
                           {name for name, fate in doubt.items() if fate is None})
    plan = []
    for step in steps:
        name, key = step["step"], step["operation_key"]
        if step["status"] in (DONE, IN_DOUBT):  # attempted: assume it ran
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
