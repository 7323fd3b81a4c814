"""WRONG ANSWER to exercise 03.2 (chapter 03): expiry tested by truthiness.

The mistake: ``expires and now >= expires`` stands in for "has an expiry and
it has passed", so an approval that expires at ``0.0`` (the epoch, a value the
column may hold) never expires, where the service refuses it. Caught by
``test_an_expiry_of_zero_is_an_expiry`` (any reader's clock after the epoch).
"""


def expired(expires, now):
    return bool(expires) and now >= expires  # 0.0 never expires
