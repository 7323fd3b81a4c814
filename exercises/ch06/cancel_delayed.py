"""Exercise 06.1: cancel while a result is delayed.

The flour request's holder is paused, and some of its orders may already be
outside: one the supplier committed (the holder has not recorded the
receipt), one whose answer was lost, one admitted whose POST is still on its
way (it may arrive at any moment, or never). The shop owner cancels. Write
the settlement: at its end the shop's rows say what happened at the supplier,
and nothing the shop calls REVOKED can still be placed.

The tests forbid ``orders.settle_cancelled`` and ``settle_all_cancelled``
(the runtime's answer): build it from the calls below. Split it as you like;
the tests call ``cancel_and_settle`` only.
"""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence, orders  # noqa: F401
from crashcourse.effects import FencingToken  # noqa: F401
from crashcourse.services import supplier as supplier_client  # noqa: F401
from crashcourse.store import immediate, sql_list  # noqa: F401
from crashcourse.validate import clock  # noqa: F401


def cancel_here(conn: sqlite3.Connection, work_id: str) -> tuple[int, int]:
    """The shop's part, in ONE transaction: the work CANCELLED under a new
    generation (``fence.cancel_locked``) and its orders that never left
    revoked (``orders.revoke_unsent``); (generation, revoked)."""
    raise NotImplementedError("exercise 06.1: write cancel_here")


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """The cancel reaching the supplier: its fence for ``work_id`` raised to
    ``generation`` (``supplier_client.fence_work``, which takes the pair
    whole: ``FencingToken(work_id, generation)``). If that is not confirmed
    (it raises ``OSError`` or ``ValueError``), raise ``orders.ResponseLost``."""
    raise NotImplementedError("exercise 06.1: write fence_supplier")


def uncertain_orders(conn: sqlite3.Connection, work_id: str) -> list[str]:
    """The operation keys of ``work_id``'s orders that may have gone out
    (status in ``orders.UNCERTAIN``)."""
    raise NotImplementedError("exercise 06.1: write uncertain_orders")


def settle(conn: sqlite3.Connection, operation_key: str, url: str) -> str:
    """Look one uncertain order up (``orders.lookup``, no claim: it records a
    receipt it finds); when may its ``NOT_FOUND`` be recorded REVOKED
    (``orders.record``)? The supplier's answer."""
    raise NotImplementedError("exercise 06.1: write settle")


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """The operator's cancel, carried to the supplier, then settled.

    Afterwards: the work is CANCELLED under a new generation, and its unsent
    orders REVOKED, both or neither; the supplier refuses every request of an
    earlier generation for ``work_id``; every order that was SENDING or
    UNKNOWN is CONFIRMED with the supplier's receipt or REVOKED, whichever is
    true, and stays so whenever the held POST arrives. Nothing is sent. The
    cancel never waits on the supplier: if its fence is not confirmed, the
    cancel stays committed; raise ``orders.ResponseLost`` and leave every
    order that may be outside uncertain. The order of the steps is the
    exercise.

    Return ``{"generation": int, "revoked": int,
    "looked_up": {operation_key: answer}}``, ``answer`` as ``orders.lookup``
    gave it (``CONFIRMED`` or ``NOT_FOUND``).
    """
    raise NotImplementedError("exercise 06.1: write cancel_and_settle")
