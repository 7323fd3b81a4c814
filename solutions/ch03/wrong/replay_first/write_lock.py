"""The reads inside ``store.immediate``, copied from ``issue_payment``. Caught by
``test_a_payment_in_progress_does_not_hold_up_the_preview``."""


def snapshot(conn):
    from crashcourse.store import immediate

    return immediate(conn)  # as issue_payment does
