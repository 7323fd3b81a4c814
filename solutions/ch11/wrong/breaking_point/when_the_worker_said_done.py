"""When the worker said it was done. Caught by
``test_the_wrong_ordering_breaks_where_the_checkpoint_reaches_the_disk``."""

from crashcourse.powerloss.runs import CHECKPOINTED
from crashcourse.powerloss.vfs import MARK


def first_break(recorder, count: int) -> int | None:
    """The point just after the first ``checkpointed`` mark."""
    marks = [i for i, e in enumerate(recorder.events, start=1)
             if e.kind == MARK and e.name == CHECKPOINTED]
    return marks[0] if marks else None
