"""WRONG ANSWER to exercise 10.2 (chapter 10): the generation without the owner.

The mistake: a write lands if it names the newest generation, the work is
running and the lease has not ended, whoever offers it. The fence compares the
owner too: a worker presenting another's generation (a copied token, a
confused restart that kept the number) is refused ("another owner").
Caught by ``another_worker_presents_the_live_generation`` (a history written out) and
``test_drawn_histories_are_judged_as_the_fence_judges_them``.
"""


def lands(history: list) -> list[bool]:
    row = {"generation": 0, "expires": None, "running": False}
    verdicts = []
    for event in history:
        if isinstance(event, Claimed):
            row = {"generation": row["generation"] + 1,
                   "expires": event.at + event.ttl, "running": True}
        elif isinstance(event, Cancelled):
            row = {**row, "generation": row["generation"] + 1, "running": False}
        else:
            verdicts.append(row["running"] and event.generation == row["generation"]
                            and event.at < row["expires"])
    return verdicts
