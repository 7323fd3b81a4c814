"""WRONG ANSWER to exercise 12.3 (chapter 12): the probe asks by content.

The mistake: the probe looks for a message to the order desk with this
order's subject, not for the adapter's key. Each test order has its own
subject, so it finds exactly the message it sent. But two tasks may place the
same order (six sacks this week and six the next): a call killed before its
message reached the provider is resumed, its probe finds the OTHER task's
message, and reports "sent". The second order is never announced.
Caught by ``test_a_lookalike_message_is_not_this_calls``.
"""


def probe(mail_path, sku, quantity, key):
    subject = f"order: {quantity} x {sku}"
    for message in mail.messages(mail_path):
        if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
            return True, message
    return False, {}
