"""Progress needs no sync at all. Caught by
``test_no_payment_lost_corrupt_or_charged_twice[unsynced_subsets]``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the record and the blind journal, OFF for progress, NORMAL
    for the journal whose probes see."""
    chosen = {RECORD: "FULL", BLIND_JOURNAL: "FULL", PROGRESS: "OFF",
              JOURNAL: "NORMAL"}
    return {name: Mode("WAL", chosen[role]) for name, role in roles.items()}
