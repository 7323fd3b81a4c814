"""Only the attempted steps listed, as the runtime's ``compensations`` table does.
Caught by ``test_the_plan_is_what_the_runtime_then_does``."""

from crashcourse.workflow.steps import NOT_DONE, NOT_STARTED


def listed(steps):
    return [s for s in steps if s["status"] not in (NOT_STARTED, NOT_DONE)]
