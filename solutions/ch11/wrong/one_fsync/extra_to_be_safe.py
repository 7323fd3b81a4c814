"""WRONG ANSWER to exercise 11.2 (chapter 11): EXTRA, to be safe.

The mistake: "the files that must survive get the most the database offers":
the system of record and the blind journal in DELETE+EXTRA, the rollback
journal with its folder synced at every commit. Nothing is lost, and every
commit of those two files pays more fsyncs than WAL+FULL, which loses nothing
either. The exercise asks for the cheapest mode that holds, role by role.
Caught by ``test_the_files_that_must_survive_pay_no_more_than_wal_full``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    durable, cheap = Mode("DELETE", "EXTRA"), Mode("WAL", "NORMAL")
    return {name: durable if role in (RECORD, BLIND_JOURNAL) else cheap
            for name, role in roles.items()}
