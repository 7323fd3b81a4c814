"""A lease is a lease."""


def lands(history: list) -> list[bool]:
    leases, verdicts = [], []
    for event in history:
        if isinstance(event, Claimed):
            leases.append(event.at + event.ttl)
        elif isinstance(event, Wrote):  # its own claim's lease, cancelled or not
            verdicts.append(event.at < leases[event.generation - 1])
    return verdicts
