"""WRONG ANSWER to exercise 07.2 (chapter 07): any irreversible step counts as mail.

The mistake: "can mail have gone out?" is answered by comparing the last row
with the first IRREVERSIBLE step, as if every irreversible step were a mail.
A plan that pays an invoice before its summaries are mailed then reports a
mail that cannot have begun. Caught by
``test_mail_possibly_sent_follows_the_last_row``.
"""


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    """True if some send_mail step is numbered at or before the last row."""
    return any(s.irreversible and s.number <= last_row for s in steps)
