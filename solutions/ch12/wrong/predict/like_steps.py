"""WRONG ANSWER to exercise 12.2 (chapter 12): plain tools read as steps.

The mistake: "what finished before the kill is not run again", true of a
step, whose output DBOS records. A plain tool has no record: the recovered
workflow runs the order again although the model's turns after it were
recorded, so a random key orders twice with plain tools. Caught by
``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, dict[str, int]]:
    """Orders at the supplier and messages at the provider, per cell."""
    return {"step/none": {"orders": 1, "messages": 2},
            "step/position": {"orders": 1, "messages": 2},
            "plain/none": {"orders": 1, "messages": 2},
            "plain/position": {"orders": 1, "messages": 2}}
