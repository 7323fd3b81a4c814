"""WRONG ANSWER to exercise 12.2 (chapter 12): the model is asked again.

The mistake: reasoning from LangGraph's ``durability="exit"``, where a lost
record means a re-asked model and a new tool-call id. Here every model turn
is a DBOS step: recovery hands back the recorded turn, same id, so the
position key is the same key and the supplier replays. Caught by
``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, int]:
    """Orders at the supplier after each kill and DBOS's recovery."""
    return {"none/after_ack": 2, "none/after_record": 2,
            "position/after_ack": 2, "position/after_record": 2}
