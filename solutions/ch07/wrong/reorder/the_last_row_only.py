"""Only the last row's step asked. Caught by
``test_drawn_plans_are_grouped_in_their_own_order``."""


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    return any(s.action == "send_mail" and s.number == last_row for s in steps)
