"""The fsync on the worker's side. Caught by
``test_no_payment_lost_corrupt_or_charged_twice``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for the worker's progress and the blind journal, NORMAL for the
    service and the journal whose probes see."""
    return {name: Mode("WAL", "FULL" if role in (PROGRESS, BLIND_JOURNAL)
                       else "NORMAL")
            for name, role in roles.items()}
