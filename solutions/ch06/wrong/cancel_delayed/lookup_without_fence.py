"""NOT_FOUND, unfenced, read as "never sent". Caught by
``test_a_post_held_until_after_the_settlement_never_lands``."""


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """Nothing: the cancel is taken to have happened everywhere."""
