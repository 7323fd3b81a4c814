"""WRONG ANSWER to exercise 08.3: a step in doubt planned like a step done, "to
be safe" (the probe answers demanded, then not used). Killed after the
attempt and before the call, the plan asks for a release of nothing where
the runtime writes ``nothing_to_undo``. Caught by
``test_the_plan_is_what_the_runtime_then_does`` and
``test_after_the_lease_the_probe_decides``.
"""


def settled(step, doubt, answers):
    if step["status"] in (DONE, IN_DOUBT):  # attempted: assume it ran
        return UNDO[step["step"]]
    return NOTHING
