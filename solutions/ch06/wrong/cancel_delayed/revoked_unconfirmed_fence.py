"""WRONG ANSWER to exercise 06.1 (chapter 06): REVOKED on a fence nobody
confirmed.

The mistake: the fence is sent, best effort, and a failure is ignored (the
supplier was down, or has no fence). The lookups then hear NOT_FOUND and
record REVOKED, as if the fence stood. It does not: the holder's held POST
arrives later and is placed, for an order the shop calls REVOKED. Without a
confirmed fence the answer must be ``orders.ResponseLost``, the orders left
uncertain for a later settlement. Caught by
``test_without_a_confirmed_fence_nothing_is_revoked``.
"""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """The fence, best effort: no answer is taken as done."""
    try:
        supplier_client.fence_work(url, work_id, generation)
    except (OSError, ValueError):
        pass
