"""WRONG ANSWER to exercise 07.2 (chapter 07): only the last row's step asked.

The mistake: "can mail have gone out?" is answered by whether the step the
last row names is a mail. A mail written earlier in the journal, followed by
another irreversible step (a payment after the mails), is forgotten: the last
row says "pay_invoice" and the answer says no mail, though one has gone.
Caught by ``test_drawn_plans_are_grouped_in_their_own_order``.
"""


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    return any(s.action == "send_mail" and s.number == last_row for s in steps)
