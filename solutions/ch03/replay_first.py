"""Solution 03.1: history before authority, as a preview (chapter 03).

See EXPLANATION.md.
"""

import time

from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.store import opened


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn:
        conn.execute("BEGIN")  # a read transaction: one snapshot, no write lock
        try:
            recorded = payments.find_payment(conn, key)
            if recorded is not None:  # history: no new effect, no authority needed
                return "already_committed" if recorded == action else "conflict"
            approval = authority.read_approval(conn, order_id)  # a new effect
            policy = authority.current_policy(conn)
        finally:
            conn.execute("ROLLBACK")  # nothing was written: nothing to keep
    reason = authority.refusal_reason(approval, action, time.time(), policy)
    return f"refused: {reason}" if reason else "would_commit"
