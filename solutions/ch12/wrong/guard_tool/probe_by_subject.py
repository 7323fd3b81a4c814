"""The probe asks by content. Caught by
``test_a_lookalike_message_is_not_this_calls``."""


def probe(mail_path, sku, quantity, key):
    subject = f"order: {quantity} x {sku}"
    for message in mail.messages(mail_path):
        if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
            return True, message
    return False, {}
