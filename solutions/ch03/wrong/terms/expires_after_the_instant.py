"""WRONG ANSWER to exercise 03.2 (chapter 03): expiry compared with ``>``.

The mistake: an approval is taken to expire strictly after ``expires_unix``
(``now > expires``), so at the instant of expiry it still authorizes a new
payment, where the service already refuses it. Caught by the case of
``test_every_reason`` at the instant (and the same case of
``test_the_first_reason_is_the_one_the_service_gives``).
"""


def expired(expires, now):
    return expires is not None and now > expires  # the instant still authorizes
