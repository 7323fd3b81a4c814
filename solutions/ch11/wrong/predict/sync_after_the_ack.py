"""WRONG ANSWER to exercise 11.1 (chapter 11): only a sync after the ack counts.

The mistake: a payment is counted at risk from its acknowledgement until
the next sync, whatever happened before it returned. In WAL+FULL the sync
comes BEFORE ``issue_payment`` returns, so nothing is ever at risk there;
this answer reports losses FULL never has. Caught by
``test_every_point_of_a_real_run[...-WAL+FULL]`` and the hand-made run's k3.
"""


from crashcourse.powerloss.vfs import MARK, SYNC


def lost_at(events: list, point: int) -> list[str]:
    """Every acknowledgement since the last sync."""
    at_risk: list[str] = []
    for event in events[:point]:
        if event.kind == SYNC:
            at_risk = []
        elif event.kind == MARK and event.name == "ack":
            at_risk.append(event.data)
    return at_risk
