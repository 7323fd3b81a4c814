"""WRONG ANSWER to exercise 12.3 (chapter 12): a probe that never finds anything.

The mistake: the probe answers "not sent" without asking the provider, as
if the intent alone were enough. The resumed call finds its intent in doubt,
the probe says nothing went out, and the adapter sends again: two messages.
Caught by ``test_a_kill_after_the_provider_accepted_leaves_one_message``.
"""


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` behind the adapter: an ``EffectTool``."""

    def notify_order_desk(sku: str, quantity: int, *, operation_key: str) -> dict:
        """Tell the supplier's order desk an order is on its way."""
        return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: operation_key})

    def notified(sku: str, quantity: int, *, operation_key: str):
        return False, {"message_id": None}

    return EffectTool(notify_order_desk, notified, journal_path=journal_path,
                      task=task, ttl=LEASE_S, wait_s=WAIT_S)
