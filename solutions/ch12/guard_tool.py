"""Exercise 12.3: put a tool behind the adapter (chapter 12).

Reference answer: the body stamps the adapter's key in the header, the
probe asks the provider for a message under that header, and the adapter
records the intent first and probes a call it finds in doubt.
"""

from __future__ import annotations

from crashcourse.adapters import EffectTool
from crashcourse.services import mail

ORDER_DESK = "orders@supplier.example"
LEASE_S, WAIT_S = 2.0, 1.0


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` behind the adapter: an ``EffectTool``."""

    def notify_order_desk(sku: str, quantity: int, *, operation_key: str) -> dict:
        """Tell the supplier's order desk an order is on its way."""
        return send(mail_path, sku, quantity, operation_key)

    def notified(sku: str, quantity: int, *, operation_key: str):
        return probe(mail_path, sku, quantity, operation_key)

    return EffectTool(notify_order_desk, notified, journal_path=journal_path,
                      task=task, ttl=LEASE_S, wait_s=WAIT_S)


def send(mail_path: str, sku: str, quantity: int, key: str) -> dict:
    """The mail, carrying the action's operation key in its header."""
    return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                       f"{quantity} x {sku} ordered today", {mail.KEY_HEADER: key})


def probe(mail_path: str, sku: str, quantity: int, key: str):
    """Did the provider accept a mail with that key? ``(found, message)``."""
    return mail.probe_sent(mail_path, key)
