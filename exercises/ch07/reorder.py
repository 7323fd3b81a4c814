"""Exercise 07.2: mail last (chapter 07).

Write these without ``crashcourse.journal.plan.order_plan`` (the tests unplug it).
A step can be irreversible without being a mail (a payment, say).
"""

from __future__ import annotations

from crashcourse.journal.plan import Step  # noqa: F401  (build and return Steps)


def reorder(steps: list) -> list:
    """Reversible steps, then gates (``step.gate``), then irreversible ones.

    Keep the original order inside each group and renumber 1..n.
    """
    raise NotImplementedError("exercise 07.2: sort the plan")


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    """From the journal's last row only: can a ``send_mail`` step have begun?

    A step numbered after ``last_row`` has no intent, so it never began.
    """
    raise NotImplementedError("exercise 07.2: compare two step numbers")
