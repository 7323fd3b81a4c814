"""A journal is a record, so FULL. Caught by
``test_a_journal_whose_probes_see_pays_no_fsync_per_commit``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record and both journals, NORMAL for progress."""
    return {name: Mode("WAL", "NORMAL" if role == PROGRESS else "FULL")
            for name, role in roles.items()}
