"""WRONG ANSWER to exercise 11.2 (chapter 11): the payment service's file by name.

The mistake: the answer recognises ``payments.sqlite`` and gives every other
file the cheap mode, so another system of record (a ledger under another
name) loses its acknowledged rows in a power cut. Read the role. Caught by
``test_the_choice_follows_the_role_not_the_name``.
"""

from __future__ import annotations

from crashcourse.powerloss import Mode

RECORD, PROGRESS = "system of record", "own progress"


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for payments.sqlite, NORMAL for every other file."""
    return {name: Mode("WAL", "FULL" if name == "payments.sqlite" else "NORMAL")
            for name in roles}
