"""Exercise 12.3: put a tool behind the adapter (chapter 12).

The shop wants one more tool: ``notify_order_desk(sku, quantity)`` mails the
supplier's order desk (``orders@supplier.example``) that an order is on its
way. The mail provider takes no idempotency key: every submission is one
more message. A framework that loses its record of the call after the
provider accepted the message runs the tool again.

Write ``order_desk_tool(mail_path, journal_path, task)``: it returns the
tool behind ``crashcourse.adapters.EffectTool``, so that a process killed
right after the provider accepted the message, then run again (a
framework's recovery), leaves exactly ONE message at the provider. You
write the tool's body and its probe; the adapter does the rest:

* the body takes ``sku``, ``quantity`` and the keyword ``operation_key``,
  and submits the message with ``mail.submit`` (through the module, as
  below: the grader watches that call), carrying the key in the
  ``mail.KEY_HEADER`` header;
* the probe takes the same arguments and answers ``(done, observed)`` from
  the provider (``mail.probe_sent`` searches by that header);
* use ``LEASE_S`` and ``WAIT_S`` below for the adapter's ``ttl`` and
  ``wait_s``: the grader's resumed process waits out the killed one's lease.

The grader calls ``tool(sku=..., quantity=...)`` in a real child process,
SIGKILLs it once ``mail.submit`` has returned, runs it again, and counts the
provider's messages.
"""

from __future__ import annotations

from crashcourse.adapters import EffectTool  # noqa: F401  (the adapter)
from crashcourse.services import mail  # noqa: F401  (call mail.submit through it)

ORDER_DESK = "orders@supplier.example"
LEASE_S, WAIT_S = 2.0, 1.0


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` behind the adapter: an ``EffectTool``."""
    raise NotImplementedError("exercise 12.3: a body, a probe, an EffectTool")
