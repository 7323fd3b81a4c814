"""EXTRA, to be safe. Caught by
``test_the_files_that_must_survive_pay_no_more_than_wal_full``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    durable, cheap = Mode("DELETE", "EXTRA"), Mode("WAL", "NORMAL")
    return {name: durable if role in (RECORD, BLIND_JOURNAL) else cheap
            for name, role in roles.items()}
