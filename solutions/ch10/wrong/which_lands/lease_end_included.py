"""WRONG ANSWER to exercise 10.2 (chapter 10): a write at the lease's end lands.

The mistake: ``at <= expires``. At the instant the lease ends the work may be
claimed by another host (a claim picks ``expires <= now``), so the fence
refuses a write arriving exactly then ("lease expired"): the two never share
an instant.
Caught by ``at_the_instant_the_lease_ends`` (a history written out) and
``test_drawn_histories_are_judged_as_the_fence_judges_them``.
"""


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
                            and event.at <= row["expires"])
    return verdicts
