"""WRONG ANSWER to exercise 03.1 (chapter 03): the real service asked on a copy
of the main file and its -wal.

The mistake: to answer as the service does, the preview copies the service's
main file and then its write-ahead log aside, and calls ``issue_payment`` on
the copy. With no writer about, the copy is the file. But the two copies are
two reads a moment apart: a commit and a checkpoint between them leave the
main file of before with the log of after (the approval, still in the old
log, gone), and the preview answers for a state the file was never in.
SQLite's backup, or reading in one transaction, copies one moment. Caught by
``test_a_copy_of_the_files_is_taken_in_one_moment``.
"""


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
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
