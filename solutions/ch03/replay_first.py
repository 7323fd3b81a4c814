"""Solution 03.1: history before authority, as a preview (chapter 03).

See EXPLANATION.md.
"""

import contextlib
import time

from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.store import opened


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn, snapshot(conn):
        recorded = payments.find_payment(conn, key)
        if recorded is not None:  # history: no new effect, no authority needed
            return history(recorded, action)
        approval = authority.read_approval(conn, order_id)  # a new effect
        policy = authority.current_policy(conn)
    return judged(approval, action, policy)


@contextlib.contextmanager
def snapshot(conn):
    """A read transaction: one snapshot, no write lock; nothing to keep."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")


def history(recorded: dict, action: dict) -> str:
    """A payment under the key: a replay of the same action, or a conflict."""
    return "already_committed" if recorded == action else "conflict"


def judged(approval, action: dict, policy: int) -> str:
    """A new effect, judged by the approval's terms under the file's policy."""
    reason = authority.refusal_reason(approval, action, time.time(), policy)
    return f"refused: {reason}" if reason else "would_commit"
