"""After the lease, "not found" is final (the rule before issue 29). Caught by
``test_the_plan_is_what_the_runtime_then_does`` and
``test_after_the_lease_the_probe_decides``."""


def fate_in_doubt(step, at):
    admitted = [a for a in step["attempts"] if a["admitted_at"] is not None]
    if not admitted:
        return NOTHING
    if max(a["expires"] for a in admitted) > at:  # the fence is not looked at
        return WAIT
    return None


def settled(step, doubt, answers):
    name = step["step"]
    if doubt.get(name) is not None:
        return doubt[name]
    if step["status"] == DONE or answers.get(name, False):
        return UNDO[name]
    return NOTHING  # not found: nothing to undo, whatever the service
