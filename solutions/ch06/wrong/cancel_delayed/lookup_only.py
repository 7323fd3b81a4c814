"""This exercise's answer before issue 29, lookup only. Caught by
``test_a_post_held_until_after_the_settlement_never_lands``."""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """Nothing: the cancel stays in the shop's database."""


def settle(conn: sqlite3.Connection, operation_key: str, url: str) -> str:
    """Look it up; a receipt is recorded, NOT_FOUND stays uncertain."""
    return orders.lookup(conn, operation_key, url)
