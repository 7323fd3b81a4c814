"""Exercise 07.2, answered: mail last (chapter 07)."""

from __future__ import annotations

from crashcourse.journal.plan import Step


def reorder(steps: list) -> list:
    """Reversible steps, then gates, then irreversible ones; renumbered."""
    groups = (
        [s for s in steps if not s.gate and not s.irreversible],
        [s for s in steps if s.gate and not s.irreversible],
        [s for s in steps if s.irreversible],
    )
    ordered = [s for group in groups for s in group]
    return [Step(n, s.action, s.args, s.irreversible, s.gate)
            for n, s in enumerate(ordered, start=1)]


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    """True if some send_mail step is numbered at or before the last row."""
    return any(s.action == "send_mail" and s.number <= last_row for s in steps)
