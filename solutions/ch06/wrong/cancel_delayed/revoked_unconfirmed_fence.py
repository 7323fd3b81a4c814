"""REVOKED on a fence nobody confirmed. Caught by
``test_without_a_confirmed_fence_nothing_is_revoked``."""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """The fence, best effort: no answer is taken as done."""
    try:
        supplier_client.fence_work(url, FencingToken(work_id, generation))
    except (OSError, ValueError):
        pass
