"""WRONG ANSWER to exercise 06.1 (chapter 06): NOT_FOUND, unfenced, read as
"never sent".

The mistake: the cancel stays in the shop's database (the supplier is never
fenced) and an order the supplier does not know is settled as REVOKED, as if
it never left. The holder's POST of it was on its way: it arrives after the
settlement, carrying a generation the supplier has no reason to refuse, and
is placed, for cancelled work whose shop row says REVOKED (review 2026-12-02,
chapters 05-08, finding 6). A lookup alone proves nothing about a request
still in flight. Caught by
``test_a_post_held_until_after_the_settlement_never_lands``.
"""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """Nothing: the cancel is taken to have happened everywhere."""
