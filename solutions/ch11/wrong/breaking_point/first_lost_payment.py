"""The first acknowledged payment lost. Caught by
``test_the_wrong_ordering_breaks_where_the_checkpoint_reaches_the_disk``."""

from crashcourse.powerloss import judge_service, tally


def first_break(recorder, count: int) -> int | None:
    """Where tally's first loss is."""
    loss = tally(recorder, explore(recorder, judge_service))["first_loss"]
    return None if loss is None else loss["point"]
