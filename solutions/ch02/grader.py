"""Solution 02.2: a grader that finds a double charge from durable rows
(chapter 02)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crashcourse.store import opened

# The query's parts, each a rule of its own; the query is put together when
# it runs (overcharged_sql), so each part can be read, and changed, alone.
PER_ORDER_AND_CURRENCY = "p.order_id, p.currency"  # cents of one currency only
# a payment nobody approved still counts: its approval is 0, not a missing row
APPROVAL_BESIDE = """LEFT JOIN approvals AS a
         ON a.order_id = p.order_id
        AND a.currency = p.currency"""
# more cents than approved, whatever the number of payments
TOO_MUCH = "sum(p.amount_cents) > coalesce(a.amount_cents, :nothing)"


def overcharged_sql() -> str:
    """Each order's payments per currency, beside its approval in that
    currency, kept where they add up to more than it allows."""
    return f"""
SELECT p.order_id,
       p.currency,
       count(*)                                AS payments,
       sum(p.amount_cents)                     AS charged_cents,
       coalesce(a.amount_cents, :nothing)      AS approved_cents
  FROM payments AS p
  {APPROVAL_BESIDE}
 GROUP BY {PER_ORDER_AND_CURRENCY}
HAVING {TOO_MUCH}
 ORDER BY {PER_ORDER_AND_CURRENCY}
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
    return conn.execute(overcharged_sql(), {"nothing": 0}).fetchall()
