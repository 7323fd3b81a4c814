"""A commit that returned is on disk. Caught by
``test_every_point_of_a_real_run[...-WAL+NORMAL]``."""


def lost_at(events: list, point: int) -> list[str]:
    """Nothing acknowledged is ever lost."""
    return []
