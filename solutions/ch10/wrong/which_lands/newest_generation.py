"""WRONG ANSWER to exercise 10.2 (chapter 10): the newest claim may write.

The mistake: a write lands if its claim is the newest one on the work (and
the work not cancelled), whenever it arrives. That is the fence without its
clock. A holder cut off past the end of its lease, with no one else claiming
yet, still looks current; but its lease ran out, another host may claim the
work at any moment, and the fence refuses it ("lease expired").
Caught by ``lapsed_and_nobody_took_it``.
"""


class Claimed(NamedTuple):
    owner: str
    at: float
    ttl: float


class Cancelled(NamedTuple):
    at: float


class Wrote(NamedTuple):
    owner: str
    generation: int
    at: float
    local_clock: float


def lands(history: list) -> list[bool]:
    generation, owner, running, verdicts = 0, None, False, []
    for event in history:
        if isinstance(event, Claimed):
            generation, owner, running = generation + 1, event.owner, True
        elif isinstance(event, Cancelled):
            generation, running = generation + 1, False
        else:
            verdicts.append(running and (event.generation, event.owner)
                            == (generation, owner))
    return verdicts
