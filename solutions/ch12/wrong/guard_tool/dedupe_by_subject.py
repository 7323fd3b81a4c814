"""WRONG ANSWER to exercise 12.3 (chapter 12): the body dedupes by content.

The mistake: the tool's body skips the send when the order desk already has a
message with this order's subject, and the probe is blind (it always says
"not sent", so a call in doubt is simply run again). Within one task that
never sends twice. Two tasks placing the same order are two orders, and the
second one's message is never sent: the content says nothing about which
call sent it; only the adapter's key does.
Caught by ``test_the_same_order_for_two_tasks_is_two_messages``.
"""


def send(mail_path, sku, quantity, key, _reference=send):  # noqa: F821
    subject = f"order: {quantity} x {sku}"
    for message in mail.messages(mail_path):
        if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
            return message
    return _reference(mail_path, sku, quantity, key)


def probe(mail_path, sku, quantity, key):
    return False, {}
