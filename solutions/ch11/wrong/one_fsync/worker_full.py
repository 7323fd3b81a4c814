"""WRONG ANSWER to exercise 11.2 (chapter 11): the fsync on the worker's side.

The mistake: the resume reads the worker's checkpoint, so that is the file
made durable, and the service is left in NORMAL. A power cut can then keep
the checkpoint ("task-0 is paid") and lose the payment it records: the
worker never pays again and the payment is gone. Caught by
``test_no_payment_lost_corrupt_or_charged_twice``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the worker's progress and the blind journal, NORMAL for the
    service and the journal whose probes see."""
    return {name: Mode("WAL", "FULL" if role in (PROGRESS, BLIND_JOURNAL)
                       else "NORMAL")
            for name, role in roles.items()}
