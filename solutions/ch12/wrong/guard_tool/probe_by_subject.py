"""WRONG ANSWER to exercise 12.3 (chapter 12): the probe asks by content.

The mistake: the probe looks for a message to the order desk with this
order's subject, not for the adapter's key. Each test order has its own
subject, so it finds exactly the message it sent. But two tasks may place the
same order (six sacks this week and six the next): a call killed before its
message reached the provider is resumed, its probe finds the OTHER task's
message, and reports "sent". The second order is never announced.
Caught by ``test_a_lookalike_message_is_not_this_calls``.
"""


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    def notify_order_desk(sku: str, quantity: int, *, operation_key: str) -> dict:
        """Tell the supplier's order desk an order is on its way."""
        return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: operation_key})

    def notified(sku: str, quantity: int, *, operation_key: str):
        subject = f"order: {quantity} x {sku}"
        for message in mail.messages(mail_path):
            if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
                return True, message
        return False, {}

    return EffectTool(notify_order_desk, notified, journal_path=journal_path,
                      task=task, ttl=LEASE_S, wait_s=WAIT_S)
