"""WRONG ANSWER to exercise 08.3 (chapter 08): the release under the order's key.

The mistake: the release is planned under the reserve step's own operation
key, "the key of the thing being undone". Every action and status is right.
But the release is a second effect, and the supplier keeps releases by their
own key: under the order's key it is not the release the runtime makes (its
key is derived from the workflow, the step, the action ``release`` and the
order it releases), so a person who carries the plan out and the runtime
that compensates ask for two different releases, and the second is refused.
Caught by ``test_the_plan_is_what_the_runtime_then_does`` (every case with a
release) and
``test_the_release_has_its_own_key_so_carrying_it_out_twice_releases_once``.
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
    answers = check_probed(probed, set(doubt),
                           {name for name, fate in doubt.items() if fate is None})
    plan = []
    for step in steps:
        name, key = step["step"], step["operation_key"]
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
            undo_key = key  # the order's key: the release of that order
        plan.append({"step": name, "operation_key": key, "action": action,
                     "status": status, "compensation_key": undo_key,
                     "note": NOTES[action]})
    return plan
