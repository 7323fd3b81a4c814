"""WRONG ANSWER to exercise 12.3 (chapter 12): the header carries a key of its own.

The mistake: the body stamps a fresh id in the header instead of the
adapter's ``operation_key``. The probe, which asks by the adapter's key,
can never find the message, so the resumed call sends it again. Caught by
``test_a_kill_after_the_provider_accepted_leaves_one_message`` and
``test_the_message_carries_the_adapters_key``.
"""


import uuid


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` behind the adapter: an ``EffectTool``."""

    def notify_order_desk(sku: str, quantity: int, *, operation_key: str) -> dict:
        """Tell the supplier's order desk an order is on its way."""
        return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: f"notify-{uuid.uuid4().hex}"})

    def notified(sku: str, quantity: int, *, operation_key: str):
        return mail.probe_sent(mail_path, operation_key)

    return EffectTool(notify_order_desk, notified, journal_path=journal_path,
                      task=task, ttl=LEASE_S, wait_s=WAIT_S)
