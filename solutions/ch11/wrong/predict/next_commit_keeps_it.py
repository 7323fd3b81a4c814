"""The next commit pushes it out. Caught by
``test_every_point_of_a_real_run[none-WAL+NORMAL]``."""


def lost_at(events: list, point: int) -> list[str]:
    """At most the last acknowledgement is at risk."""
    at_risk: list[str] = []
    unsynced = False
    for event in events[:point]:
        if event.kind == WRITE:
            unsynced = True
        elif event.kind == SYNC:
            unsynced, at_risk = False, []
        elif event.kind == MARK and event.name == "ack":
            at_risk = [event.data] if unsynced else []
    return at_risk
