"""WRONG ANSWER to exercise 12.3 (chapter 12): the body dedupes by content.

The mistake: the tool's body skips the send when the order desk already has a
message with this order's subject, and the probe is blind (it always says
"not sent", so a call in doubt is simply run again). Within one task that
never sends twice. Two tasks placing the same order are two orders, and the
second one's message is never sent: the content says nothing about which
call sent it; only the adapter's key does.
Caught by ``test_the_same_order_for_two_tasks_is_two_messages``.
"""


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    def notify_order_desk(sku: str, quantity: int, *, operation_key: str) -> dict:
        """Tell the supplier's order desk an order is on its way."""
        subject = f"order: {quantity} x {sku}"
        for message in mail.messages(mail_path):
            if (message["recipient"], message["subject"]) == (ORDER_DESK, subject):
                return message
        return mail.submit(mail_path, ORDER_DESK, subject,
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: operation_key})

    def notified(sku: str, quantity: int, *, operation_key: str):
        return False, {}

    return EffectTool(notify_order_desk, notified, journal_path=journal_path,
                      task=task, ttl=LEASE_S, wait_s=WAIT_S)
