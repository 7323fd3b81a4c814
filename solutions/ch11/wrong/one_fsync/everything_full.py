"""WRONG ANSWER to exercise 11.2 (chapter 11): sync everything, to be safe.

The mistake: every file in WAL+FULL. Nothing is lost, and the worker's
checkpoint and the journal whose probes see pay an fsync per commit that
buys nothing: what a cut takes from them is asked of the target again under
the same operation key. Caught by
``test_the_worker_s_checkpoint_pays_no_fsync_per_commit`` and
``test_a_journal_whose_probes_see_pays_no_fsync_per_commit``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for every file."""
    return dict.fromkeys(roles, Mode("WAL", "FULL"))
