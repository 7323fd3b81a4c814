"""A step in doubt planned like a step done, "to be safe" (the probe answers demanded,
then not used). Caught by ``test_the_plan_is_what_the_runtime_then_does`` and
``test_after_the_lease_the_probe_decides``."""


def settled(step, doubt, answers):
    if step["status"] in (DONE, IN_DOUBT):  # attempted: assume it ran
        return UNDO[step["step"]]
    return NOTHING
