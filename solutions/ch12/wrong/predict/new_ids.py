"""WRONG ANSWER to exercise 12.2 (chapter 12): the model is asked again.

The mistake: reasoning from LangGraph's ``durability="exit"``, where a lost
record means a re-asked model and a new tool-call id. Here every model turn
is a DBOS step: recovery hands back the recorded turn, same id, so the plain
tools' position key is the same key and the supplier replays the first
order. Caught by ``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, dict[str, int]]:
    """Orders at the supplier and messages at the provider, per cell."""
    return {"step/none": {"orders": 1, "messages": 2},
            "step/position": {"orders": 1, "messages": 2},
            "plain/none": {"orders": 2, "messages": 2},
            "plain/position": {"orders": 2, "messages": 2}}
