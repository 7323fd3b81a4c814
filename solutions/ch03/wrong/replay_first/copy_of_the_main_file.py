"""WRONG ANSWER to exercise 03.1 (chapter 03): the real service asked on a copy
of the file.

The mistake: to be sure of answering as the service does, the preview copies
the service's file aside and calls ``issue_payment`` on the copy. It writes
nothing to the real file and takes no lock on it; but it copies the main file
only. In WAL mode a commit lands in the write-ahead log first and reaches the
main file at a checkpoint, which waits while any other process holds the
file open. The copy then lacks the payment just committed, and the preview
says ``would_commit`` for a key the service has already paid. Caught by
``test_a_payment_still_in_the_write_ahead_log_is_history``.
"""

import shutil
import tempfile
from pathlib import Path


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    with tempfile.TemporaryDirectory() as aside:
        copy = Path(aside) / "payments.db"
        shutil.copyfile(path, copy)  # the main file, not its -wal
        try:
            said = payments.issue_payment(copy, key, order_id, amount_cents,
                                          currency)
        except payments.PaymentConflict:
            return "conflict"
        except payments.ApprovalRefused as refused:
            return f"refused: {refused.reason}"
    return {"committed": "would_commit"}.get(said, said)
