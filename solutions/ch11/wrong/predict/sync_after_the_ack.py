"""Only a sync after the ack counts. Caught by
``test_every_point_of_a_real_run[...-WAL+FULL]``."""


def lost_at(events: list, point: int) -> list[str]:
    """Every acknowledgement since the last sync."""
    at_risk: list[str] = []
    for event in events[:point]:
        if event.kind == SYNC:
            at_risk = []
        elif event.kind == MARK and event.name == "ack":
            at_risk.append(event.data)
    return at_risk
