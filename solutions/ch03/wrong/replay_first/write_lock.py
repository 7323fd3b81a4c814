"""WRONG ANSWER to exercise 03.1: the reads inside ``store.immediate``, copied
from ``issue_payment``. The answers are right, but the preview waits behind
any payment in progress, and holds up every payment while it reads. Caught
by ``test_a_payment_in_progress_does_not_hold_up_the_preview``.
"""


def snapshot(conn):
    from crashcourse.store import immediate

    return immediate(conn)  # as issue_payment does
