"""WRONG ANSWER to exercise 12.3 (chapter 12): the key without the journal.

The mistake: the tool computes a good key from the action and stamps it in
the header, but calls the provider directly, with no intent recorded and no
probe. A provider that took the key would fold the second request into the
first; the mail provider takes none, so the resumed call mails again.
Caught by ``test_a_kill_after_the_provider_accepted_leaves_one_message``.
"""

from __future__ import annotations

from crashcourse.effects import operation_key
from crashcourse.services import mail

ORDER_DESK = "orders@supplier.example"
LEASE_S, WAIT_S = 2.0, 1.0


class KeyedTool:
    """A tool that sends the action's key, and nothing more."""

    def __init__(self, mail_path: str, task: str) -> None:
        self.mail_path, self.task = mail_path, task

    def key(self, **arguments) -> str:
        return operation_key(self.task, "notify_order_desk", "call", arguments)

    def __call__(self, **arguments) -> dict:
        sku, quantity = arguments["sku"], arguments["quantity"]
        return mail.submit(self.mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: self.key(**arguments)})


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` with the action's key in its header."""
    return KeyedTool(mail_path, task)
