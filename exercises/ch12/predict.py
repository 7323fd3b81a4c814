"""Exercise 12.2: predict the cells of a kill the chapter did not make.

The chapter killed its frameworks before the order's request, after the
supplier's acknowledgement, and after the next record, and counted the
ORDERS; it killed DBOS at none of the mail's boundaries. Here the kill comes
later: right after the mail provider accepted the confirmation, the last
tool's request, before that tool returned (``after_ack:send_confirmation``).
Count what is at both services once DBOS has recovered the workflow
(``DBOS.launch()`` in a fresh process): the order REQUESTS the supplier
received (every POST of an order, a repeated key included), the orders it
holds, and the provider's messages.

The worker is ``python -m crashcourse.workers.frameworks.dbos_agent``, two
ways:

* ``step``: every tool call a ``@DBOS.step`` (the chapter's DBOS);
* ``plain``: the tools as plain functions inside the workflow
  (``--tools plain``), what Pydantic AI does with a tool nobody decorated;
  the model's turns are still DBOS steps, so each one's answer, the tool
  call's id included, is recorded;

each with two keys:

* ``position``: the workflow id and DBOS's step id (``step``), or the
  workflow id and the model's tool-call id (``plain``). The mail provider
  takes no key: it travels in the ``X-Operation-Key`` header;
* ``action``: every tool behind the chapter's adapter (``EffectTool``): the
  action key, an intent in the adapter's journal before each call, and a
  probe of a call the journal leaves in doubt (with ``step``, the adapter's
  call is itself a step).

Return ``{"step/position": {"requests": n, "orders": n, "messages": n},
"plain/position": {...}, "step/action": {...}, "plain/action": {...}}``.
The tests make the four kills for real and compare.
"""

from __future__ import annotations


def predicted() -> dict[str, dict[str, int]]:
    """Order requests and orders at the supplier, messages at the provider,
    per cell."""
    raise NotImplementedError("exercise 12.2: predict, then let the tests run it")
