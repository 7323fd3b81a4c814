"""The real service asked on a copy of the file. Caught by
``test_a_payment_still_in_the_write_ahead_log_is_history``."""

import shutil
import tempfile
from pathlib import Path


def preview(path, key, order_id, amount_cents, currency) -> str:
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
