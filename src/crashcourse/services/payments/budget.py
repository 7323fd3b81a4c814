"""The allowance beside the effect: a durable payment budget (chapter 04).

The budget lives in the payment service's own database, stored before the first
payment: a maximum number of payments and a cap in integer cents per currency.
Nothing here counts: consumption is DERIVED from the committed rows of the
``payments`` table every time it is needed, so there is no second counter that
a crash could leave out of step, and deleting the worker's checkpoint cannot
give any allowance back.

``shortfall`` is called by ``services.payments.issue_payment`` inside its
``BEGIN IMMEDIATE`` transaction, after the replay and approval checks and
before the insert: the write lock is held while the rows are counted, so two
processes cannot both see the last unit free. A currency with no cap has no
allowance: there is no uncapped path.
"""

from __future__ import annotations

import sqlite3

from crashcourse.store import immediate, opened
from crashcourse.validate import MAX_CENTS, MAX_COUNT, check_count, check_currency

# the payment service's file, installed by payments.install (no import: a cycle)
PAYMENTS = ("payments",)
TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS budget_policy (
    id          INTEGER PRIMARY KEY CHECK (id = 1),   -- one policy per service
    max_actions INTEGER NOT NULL CHECK (max_actions >= 0)
);
CREATE TABLE IF NOT EXISTS budget_caps (
    currency  TEXT PRIMARY KEY,
    cap_cents INTEGER NOT NULL CHECK (cap_cents >= 0)   -- zero is a valid cap
)
"""



class BudgetPolicyError(ValueError):
    """The budget cannot be stored (payments exist, or another policy is set)."""


def check_policy(max_actions: object, currency_caps: object) -> tuple[int, dict]:
    """Validate a whole budget policy before anything is written (chapter 04)."""
    if max_actions is None or currency_caps is None:
        raise TypeError("a budget needs both max_actions and currency_caps")
    check_count("max_actions", max_actions, MAX_COUNT)
    if not isinstance(currency_caps, dict):
        raise TypeError("currency_caps must be a dict of currency -> cents")
    for currency, cap in currency_caps.items():
        check_currency(currency)
        check_count(f"cap for {currency}", cap, MAX_CENTS)
    return max_actions, dict(currency_caps)


def set_budget(path: str | Path, max_actions: int, currency_caps: dict) -> None:
    """Store the budget once, before any payment (chapter 04).

    Storing the same policy again is a no-op; a different one, or any policy
    once a payment exists, raises ``BudgetPolicyError`` and writes nothing."""
    max_actions, caps = check_policy(max_actions, currency_caps)
    wanted = {"max_actions": max_actions, "currency_caps": caps}
    with opened(path, require=PAYMENTS, record=True) as conn, immediate(conn):
        stored = read_policy(conn)
        if stored == wanted:
            return
        if stored is not None:
            raise BudgetPolicyError("a different budget is already stored")
        if conn.execute("SELECT 1 FROM payments LIMIT 1").fetchone():
            raise BudgetPolicyError("a budget is stored before the first payment")
        conn.execute(
            "INSERT INTO budget_policy (id, max_actions) VALUES (1, :max_actions)",
            {"max_actions": max_actions},
        )
        conn.executemany(
            "INSERT INTO budget_caps (currency, cap_cents) VALUES (:currency, :cap)",
            [{"currency": c, "cap": cap} for c, cap in caps.items()],
        )


def read_policy(conn: sqlite3.Connection) -> dict | None:
    """The stored budget, or None for a service without one."""
    row = conn.execute("SELECT max_actions FROM budget_policy WHERE id = 1").fetchone()
    if row is None:
        return None
    caps = conn.execute("SELECT currency, cap_cents FROM budget_caps ORDER BY currency")
    return {"max_actions": row["max_actions"],
            "currency_caps": {r["currency"]: r["cap_cents"] for r in caps}}


def consumption(conn: sqlite3.Connection) -> dict:
    """Charged payments and cents per currency, counted from committed rows."""
    actions = conn.execute("SELECT count(*) FROM payments").fetchone()[0]
    cents = conn.execute(
        "SELECT currency, sum(amount_cents) AS cents FROM payments"
        " GROUP BY currency ORDER BY currency"
    )
    return {"actions": actions, "cents": {r["currency"]: r["cents"] for r in cents}}


def shortfall(conn: sqlite3.Connection, amount_cents: int, currency: str) -> str | None:
    """Why one more payment does not fit the stored budget, or None.

    Call inside the payment's ``BEGIN IMMEDIATE`` transaction (chapter 04)."""
    policy = read_policy(conn)
    if policy is None:
        return None  # no budget stored: the chapter 01-03 service, unchanged
    used = consumption(conn)
    if used["actions"] + 1 > policy["max_actions"]:
        return "budget_action_limit"
    cap = policy["currency_caps"].get(currency)
    if cap is None or used["cents"].get(currency, 0) + amount_cents > cap:
        return "budget_currency_cap"
    return None


def budget_snapshot(path: str | Path) -> dict:
    """The allowance as the rows say: charged and remaining (chapter 04)."""
    with opened(path, require=PAYMENTS, record=True) as conn:
        policy, used = read_policy(conn), consumption(conn)
    snap = {"budgeted": policy is not None, "charged_actions": used["actions"],
            "charged_cents": used["cents"]}
    if policy is None:
        return snap | {"remaining_actions": None, "remaining_cents": None}
    caps = policy["currency_caps"]
    return snap | {
        "max_actions": policy["max_actions"],
        "currency_caps": caps,
        "remaining_actions": policy["max_actions"] - used["actions"],
        "remaining_cents": {
            c: cap - used["cents"].get(c, 0) for c, cap in caps.items()
        },
    }
