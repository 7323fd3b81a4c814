"""The body dedupes by content. Caught by
``test_the_same_order_for_two_tasks_is_two_messages``."""


def send(mail_path, sku, quantity, key, _reference=send):  # noqa: F821
    subject = f"order: {quantity} x {sku}"
    for message in mail.messages(mail_path):
        if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
            return message
    return _reference(mail_path, sku, quantity, key)


def probe(mail_path, sku, quantity, key):
    return False, {}
