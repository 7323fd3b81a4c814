"""Exercise 06.1: cancel while a result is delayed.

The flour request's holder is still waiting on the model, and one of its
orders already went out to the supplier (the supplier committed it; the
holder has not recorded the receipt). The shop owner cancels the request.
"""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence, orders
from crashcourse.store import immediate, sql_list  # noqa: F401
from crashcourse.validate import clock  # noqa: F401


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """The operator's cancel, then settling what may already be outside.

    1. In ONE transaction: move the work to CANCELLED with a new generation
       (``fence.cancel_locked``) and revoke its orders that never left
       (``orders.revoke_unsent``).
    2. For every order of ``work_id`` whose status is in ``orders.UNCERTAIN``
       (SENDING or UNKNOWN): look it up at the supplier (``orders.lookup``
       with no claim). A receipt is recorded; an order the supplier does not
       know stays uncertain. Never send.

    Return ``{"generation": int, "revoked": int,
    "looked_up": {operation_key: answer}}``.
    """
    raise NotImplementedError("exercise 06.1: write cancel_and_settle")
