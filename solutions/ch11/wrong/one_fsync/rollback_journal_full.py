"""FULL is FULL in any journal mode. Caught by
``test_no_payment_lost_corrupt_or_charged_twice``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """DELETE+FULL for the record, WAL+FULL for the blind journal, WAL+NORMAL
    for the rest."""
    chosen = {RECORD: Mode("DELETE", "FULL"), BLIND_JOURNAL: Mode("WAL", "FULL")}
    return {name: chosen.get(role, Mode("WAL", "NORMAL"))
            for name, role in roles.items()}
