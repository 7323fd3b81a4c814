"""WRONG ANSWER to exercise 11.2 (chapter 11): progress needs no sync at all.

The mistake: the worker's file in WAL+OFF, which never syncs, not even
before a checkpoint copies the WAL into the database file. A power cut in
the middle of that copy can leave the database half overwritten with no
durable WAL to finish it from: the worker's file is corrupt and nothing
resumes from it. Caught by
``test_no_payment_lost_corrupt_or_charged_twice[unsynced_subsets]``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record and the blind journal, OFF for progress, NORMAL
    for the journal whose probes see."""
    chosen = {RECORD: "FULL", BLIND_JOURNAL: "FULL", PROGRESS: "OFF",
              JOURNAL: "NORMAL"}
    return {name: Mode("WAL", chosen[role]) for name, role in roles.items()}
