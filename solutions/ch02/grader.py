"""Solution 02.2: a grader that finds a double charge from durable rows
(chapter 02)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crashcourse.store import opened

OVERCHARGED = """
SELECT p.order_id,
       p.currency,
       count(*)                                AS payments,
       sum(p.amount_cents)                     AS charged_cents,
       coalesce(a.amount_cents, :nothing)      AS approved_cents
  FROM payments AS p
  LEFT JOIN approvals AS a            -- a payment nobody approved still counts
         ON a.order_id = p.order_id
        AND a.currency = p.currency   -- cents of one currency, never mixed
 GROUP BY p.order_id, p.currency
HAVING sum(p.amount_cents) > coalesce(a.amount_cents, :nothing)
 ORDER BY p.order_id, p.currency
"""


def overcharged_orders(
    service: str | Path,
) -> dict[tuple[str, str], dict[str, int]]:
    """Every order charged beyond its approval, per currency."""
    with opened(service) as conn:  # the service's file is the only witness
        found = overcharged_rows(conn)
    return {
        (row["order_id"], row["currency"]): {
            "payments": row["payments"],
            "charged_cents": row["charged_cents"],
            "approved_cents": row["approved_cents"],
        }
        for row in found
    }


def overcharged_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """The overcharged rows, read and nothing written."""
    return conn.execute(OVERCHARGED, {"nothing": 0}).fetchall()
