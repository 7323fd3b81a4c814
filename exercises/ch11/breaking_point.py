"""Exercise 11.3: find the crash point that breaks a wrong ordering (chapter 11).

The worker of chapter 02 pays, then writes its checkpoint. Here the payment
service runs in WAL+NORMAL and the worker's checkpoint file in WAL+FULL:
what the worker notes reaches the disk BEFORE the payment it notes. No
SIGKILL can tell (the operating system keeps every write a killed process
made); a power cut can.

``crashcourse.powerloss.runs.pay_then_checkpoint_run`` records such a run;
``crashcourse.powerloss.images.explore`` rebuilds and judges the image of
every crash point; ``crashcourse.powerloss.runs.resume_payments`` is a judge
that resumes the worker on an image and reports, among other things,
``unpaid``: the tasks the worker holds done whose payment the image lacks.
"""

from __future__ import annotations

from crashcourse.powerloss.images import explore  # noqa: F401  (the explorer)
from crashcourse.powerloss.runs import resume_payments  # noqa: F401  (a judge)


def first_break(recorder, count: int) -> int | None:
    """The first crash point at which a power cut (only synced writes
    survive) leaves a task the worker holds done with no payment for it,
    once the worker has resumed; None if no point of the run does.

    ``recorder`` is a recorded pay-then-checkpoint run of ``count`` tasks.
    """
    raise NotImplementedError("exercise 11.3: search every crash point")
