"""WRONG ANSWER to exercise 10.2 (chapter 10): the writer's own clock.

The mistake: a write is judged by ``local_clock``, what the worker's host
said the time was, as a worker judges its own lease ("I still have ten
seconds"). Newest claim, owner and cancel are all checked; the clock is the
wrong one. The fence compares the lease with the database's instant, so a
holder whose clock runs slow believes in a lease that ended, and one whose
clock runs fast gives up a live one.
Caught by ``a_fast_clock_on_a_live_claim`` and ``lapsed_and_nobody_took_it``.
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
    row = {"generation": 0, "owner": None, "expires": None, "running": False}
    verdicts = []
    for event in history:
        if isinstance(event, Claimed):
            row = {"generation": row["generation"] + 1, "owner": event.owner,
                   "expires": event.at + event.ttl, "running": True}
        elif isinstance(event, Cancelled):
            row = {**row, "generation": row["generation"] + 1, "running": False}
        else:
            verdicts.append(row["running"]
                            and (event.generation, event.owner)
                            == (row["generation"], row["owner"])
                            and event.local_clock < row["expires"])
    return verdicts
