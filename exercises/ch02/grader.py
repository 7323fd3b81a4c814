"""Exercise 02.2: a grader that finds a double charge from durable rows
(chapter 02).

The grader is handed the payment service's file, by its path, and nothing
else: no exit status, no report, not the worker's own file with its
checkpoint. The service's file holds two tables the grader may read:

* ``approvals (order_id, amount_cents, currency, revoked)``: one row per order,
  the amount it may be charged, in that currency (revoked approvals still say
  how much was approved);
* ``payments (key, order_id, amount_cents, currency)``: one row per committed
  payment, keyed by the operation key it was made under.

Open the file with ``crashcourse.store.opened`` and use named SQL parameters.
"""

from __future__ import annotations

from pathlib import Path

from crashcourse.store import opened  # noqa: F401  (open the file with this)


def overcharged_orders(
    service: str | Path,
) -> dict[tuple[str, str], dict[str, int]]:
    """Every order whose committed payments, in one currency, add up to more
    than its approval allows in that currency.

    Return ``{(order_id, currency): {"payments": n, "charged_cents": total,
    "approved_cents": approved}}`` where ``n`` payments of that order in that
    currency add up to ``total`` cents, only where ``total`` exceeds
    ``approved``. An approval allows its amount in its own currency and
    nothing in any other; an order with no approval row is approved for 0.
    Orders charged within their approval are left out, so a clean ledger gives
    ``{}``. ``service`` is the payment service's path. Read only: write
    nothing to the file.
    """
    raise NotImplementedError("exercise 02.2: write overcharged_orders")
