"""WRONG ANSWER to exercise 06.1 (chapter 06): this exercise's answer before
issue 29, lookup only.

The mistake: the cancel and the revocation are right, the lookups record the
receipts, and an order the supplier does not know is rightly not called
REVOKED; but the supplier is never fenced, so it is left uncertain forever.
The holder's held POST lands after the settlement and is placed for
cancelled work, an order a fence would have refused, and recovery never
claims cancelled work to look again (a cancel is not permission). Caught by
``test_a_post_held_until_after_the_settlement_never_lands``.
"""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """Nothing: the cancel stays in the shop's database."""


def settle(conn: sqlite3.Connection, operation_key: str, url: str) -> str:
    """Look it up; a receipt is recorded, NOT_FOUND stays uncertain."""
    return orders.lookup(conn, operation_key, url)
