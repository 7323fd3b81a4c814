"""WRONG ANSWER to exercise 11.1 (chapter 11): the next commit pushes it out.

The mistake: a payment is thought safe once a LATER payment has returned
(or a sync came), as if a second commit forced the first one to disk. It
only appends more unsynced frames behind it: in WAL+NORMAL with no
checkpoint before the close every payment stays at risk. Caught by
``test_every_point_of_a_real_run[none-WAL+NORMAL]``.
"""


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
