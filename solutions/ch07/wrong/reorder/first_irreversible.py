"""Any irreversible step counts as mail. Caught by
``test_mail_possibly_sent_follows_the_last_row``."""


def mail_possibly_sent(steps: list, last_row: int) -> bool:
    return any(s.irreversible and s.number <= last_row for s in steps)
