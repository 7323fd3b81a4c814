"""Exercise 10.3: choose the clock for a lease (chapter 10).

A worker whose task runs longer than its lease renews the lease before it
ends: a heartbeat. On one machine any clock would do, as long as every
reader used the same one. Across hosts the lease is written by one worker
and read by the others, each with its own clock, and the clocks disagree.

Write ``renew`` for a store on a PostgreSQL server (``conn`` is a
``crashcourse.store.postgres`` connection; ``crashcourse.store`` and
``crashcourse.claims.fence`` work on it as on SQLite).
"""

from __future__ import annotations

from crashcourse import claims, store
from crashcourse.claims import fence
from crashcourse.claims import Claim


def renew(conn, claim: Claim, ttl: float) -> float | None:
    """Extend ``claim``'s lease to end ``ttl`` seconds from now, if ``claim``
    is still the live claim on its work (the same generation and owner,
    RUNNING, its lease not yet over). Return the lease's new end as it is
    stored in ``work.expires``, or None when refused, with nothing changed.

    A renewal never brings back a lease that has already run out: by then
    another host may hold the work. ``ttl`` is checked as a claim's is
    (``claims.check_lease``): bad input raises and changes nothing.
    Which clock says "now"? Every host must read the same lease the same way.
    """
    raise NotImplementedError("exercise 10.3: choose the clock, then renew")
