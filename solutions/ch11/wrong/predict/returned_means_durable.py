"""WRONG ANSWER to exercise 11.1 (chapter 11): a commit that returned is on disk.

The mistake: ``issue_payment`` returned, so the payment is taken to be
durable, whatever the level. True of a killed process, whose writes the
operating system still holds; false of a power cut in WAL+NORMAL, where the
commit's frames sit unsynced until the next checkpoint. Caught by
``test_every_point_of_a_real_run[...-WAL+NORMAL]`` and the hand-made run.
"""


def lost_at(events: list, point: int) -> list[str]:
    """Nothing acknowledged is ever lost."""
    return []
