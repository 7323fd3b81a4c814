"""WRONG ANSWER to exercise 11.3 (chapter 11): the first acknowledged payment lost.

The mistake: the first point whose image lacks an acknowledged payment is
taken for the break. The payment is lost earlier, just after it returned,
while the worker has not yet written its checkpoint: the resume finds no
checkpoint and pays again under the same key, and nothing is wrong yet. The
break starts only once the checkpoint is on disk. Caught by
``test_the_wrong_ordering_breaks_where_the_checkpoint_reaches_the_disk``.
"""


from crashcourse.powerloss import judge_service, tally


def first_break(recorder, count: int) -> int | None:
    """Where tally's first loss is."""
    loss = tally(recorder, explore(recorder, judge_service))["first_loss"]
    return None if loss is None else loss["point"]
