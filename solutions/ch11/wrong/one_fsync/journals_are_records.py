"""WRONG ANSWER to exercise 11.2 (chapter 11): a journal is a record, so FULL.

The mistake: both journals in FULL, because a journal's rows answer "what
did we do?". The one whose probes all see gains nothing from it: a lost
intent or outcome is found again at the target, and the chapter's NORMAL
run repeated nothing. Only the blind journal needs its intents kept.
Caught by ``test_a_journal_whose_probes_see_pays_no_fsync_per_commit``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record and both journals, NORMAL for progress."""
    return {name: Mode("WAL", "NORMAL" if role == PROGRESS else "FULL")
            for name, role in roles.items()}
