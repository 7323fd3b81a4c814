"""WRONG ANSWER to exercise 03.1 (chapter 03): the preview takes the write lock.

The mistake: the reads run inside ``store.immediate``, copied from
``issue_payment``. The answers are right, but a preview now waits behind any
payment in progress (up to the busy timeout, then ``database is locked``),
and while it holds the lock every worker paying at that moment waits for the
owner's screen. Caught by
``test_a_payment_in_progress_does_not_hold_up_the_preview``.
"""


from crashcourse.store import immediate, opened


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn, immediate(conn):  # as issue_payment does
        recorded = payments.find_payment(conn, key)
        if recorded is not None:  # history: no new effect, no authority needed
            return "already_committed" if recorded == action else "conflict"
        approval = authority.read_approval(conn, order_id)  # a new effect
        policy = authority.current_policy(conn)
    reason = authority.refusal_reason(approval, action, time.time(), policy)
    return f"refused: {reason}" if reason else "would_commit"
