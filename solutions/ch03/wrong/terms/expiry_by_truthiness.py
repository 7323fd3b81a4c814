"""Expiry tested by truthiness. Caught by ``test_an_expiry_of_zero_is_an_expiry``."""


def expired(expires, now):
    return bool(expires) and now >= expires  # 0.0 never expires
