"""Sync everything, to be safe. Caught by
``test_the_worker_s_checkpoint_pays_no_fsync_per_commit`` and
``test_a_journal_whose_probes_see_pays_no_fsync_per_commit``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for every file."""
    return dict.fromkeys(roles, Mode("WAL", "FULL"))
