"""WRONG ANSWER to exercise 11.2 (chapter 11): the payment service's file by name.

The mistake: the answer recognises ``payments.sqlite`` and gives every other
file the cheap mode, so another system of record (a ledger under another
name) loses its acknowledged rows in a power cut, and so does the journal
with a blind step. Read the role. Caught by
``test_the_choice_follows_the_role_not_the_name`` (and the blind journal's
test).
"""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for payments.sqlite, NORMAL for every other file."""
    return {name: Mode("WAL", "FULL" if name == "payments.sqlite" else "NORMAL")
            for name in roles}
