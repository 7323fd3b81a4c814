"""WRONG ANSWER to exercise 11.2 (chapter 11): the probe saves every journal.

The mistake: chapter 11's journal lost intents in NORMAL and repeated
nothing, because its probes asked the targets. So both journals get NORMAL.
With a blind step the cut takes the intent of a mail already sent, the
resumed run finds no doubt at all, asks a probe that cannot see, and sends
it again: a repeat with no trace that it might be one. Caught by
``test_a_blind_journal_repeats_only_the_step_it_held_in_doubt``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record, NORMAL for everything else."""
    return {name: Mode("WAL", "FULL" if role == RECORD else "NORMAL")
            for name, role in roles.items()}
