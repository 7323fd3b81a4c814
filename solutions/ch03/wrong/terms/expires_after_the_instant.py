"""Expiry compared with ``>``. Caught by ``test_every_reason`` and
``test_the_first_reason_is_the_one_the_service_gives``."""


def expired(expires, now):
    return expires is not None and now > expires  # the instant still authorizes
