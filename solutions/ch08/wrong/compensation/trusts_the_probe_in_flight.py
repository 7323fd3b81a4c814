"""An admitted call settled by the probe at once, lease or no lease, and "not found"
taken as nothing to undo at every service: the plan says "nothing to undo" for a mail
the held worker sends a moment later (only the fenced supplier's "no" is final). Caught
by ``test_the_plan_is_what_the_runtime_then_does`` and
``test_after_the_lease_the_probe_decides``."""


def fate_in_doubt(step, at):
    if not any(a["admitted_at"] is not None for a in step["attempts"]):
        return NOTHING
    return None  # the probe decides at once


def settled(step, doubt, answers):
    name = step["step"]
    if doubt.get(name) is not None:
        return doubt[name]
    if step["status"] == DONE or answers.get(name, False):
        return UNDO[name]
    return NOTHING  # not found: nothing to undo, whatever the service
