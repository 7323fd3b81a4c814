"""WRONG ANSWER to exercise 12.3 (chapter 12): the header carries a key of its own.

The mistake: the body stamps a fresh id in the header instead of the
adapter's ``operation_key``. The probe, which asks by the adapter's key,
can never find the message, so the resumed call sends it again. Caught by
``test_a_kill_after_the_provider_accepted_leaves_one_message`` and
``test_the_message_carries_the_adapters_key``.
"""


import uuid


def send(mail_path, sku, quantity, key):
    return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                       f"{quantity} x {sku} ordered today",
                       {mail.KEY_HEADER: f"notify-{uuid.uuid4().hex}"})  # its own key
