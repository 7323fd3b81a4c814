"""The real service asked on a copy of the main file and its -wal. Caught by
``test_a_copy_of_the_files_is_taken_in_one_moment``."""


def preview(path, key, order_id, amount_cents, currency) -> str:
    import shutil
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as aside:
        copy = Path(aside) / "payments.db"
        shutil.copyfile(path, copy)  # the main file ...
        wal = Path(f"{path}-wal")
        if wal.exists():  # ... and the log, a moment later
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        try:
            said = payments.issue_payment(copy, key, order_id, amount_cents,
                                          currency)
        except payments.PaymentConflict:
            return "conflict"
        except payments.ApprovalRefused as refused:
            return f"refused: {refused.reason}"
    return {"committed": "would_commit"}.get(said, said)
