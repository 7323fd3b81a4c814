"""The probe saves every journal. Caught by
``test_a_blind_journal_repeats_only_the_step_it_held_in_doubt``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record, NORMAL for everything else."""
    return {name: Mode("WAL", "FULL" if role == RECORD else "NORMAL")
            for name, role in roles.items()}
