"""WRONG ANSWER to exercise 12.2 (chapter 12): plain tools read as steps.

The mistake: "after the record, nothing runs again", true of a step, whose
output DBOS records. A plain tool has no record: the recovered workflow runs
it again even though the model turn after it was recorded, so ``none``
orders twice at ``after_record`` too. Caught by
``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, int]:
    """Orders at the supplier after each kill and DBOS's recovery."""
    return {"none/after_ack": 2, "none/after_record": 1,
            "position/after_ack": 1, "position/after_record": 1}
