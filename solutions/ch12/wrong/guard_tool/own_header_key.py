"""The header carries a key of its own. Caught by
``test_a_kill_after_the_provider_accepted_leaves_one_message`` and
``test_the_message_carries_the_adapters_key``."""

import uuid


def send(mail_path, sku, quantity, key):
    return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                       f"{quantity} x {sku} ordered today",
                       {mail.KEY_HEADER: f"notify-{uuid.uuid4().hex}"})  # its own key
