"""WRONG ANSWER to exercise 11.2 (chapter 11): FULL is FULL in any journal mode.

The mistake: the system of record in DELETE+FULL, the rollback journal. Its
commit ends by unlinking the journal, and at FULL that unlink is not made
durable before ``issue_payment`` returns (only EXTRA syncs the folder): a
power cut brings the journal back, and the next opener rolls the
acknowledged payment back. Caught by
``test_no_payment_lost_corrupt_or_charged_twice``.
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """DELETE+FULL for the record, WAL+FULL for the blind journal, WAL+NORMAL
    for the rest."""
    chosen = {RECORD: Mode("DELETE", "FULL"), BLIND_JOURNAL: Mode("WAL", "FULL")}
    return {name: chosen.get(role, Mode("WAL", "NORMAL"))
            for name, role in roles.items()}
