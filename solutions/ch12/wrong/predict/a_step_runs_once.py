"""WRONG ANSWER to exercise 12.2 (chapter 12): a step's effect happens once.

The mistake: "DBOS runs each step once", so with the tools as steps the
confirmation goes once. DBOS records a step's output when it returns; the
kill came after the provider accepted the mail and before the tool
returned, so the record is missing and recovery runs the step again, as the
chapter's after-acknowledgement column shows for the order ("steps get
at-least-once guarantees"). Caught by ``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, dict[str, int]]:
    """Orders at the supplier and messages at the provider, per cell."""
    return {"step/none": {"orders": 1, "messages": 1},
            "step/position": {"orders": 1, "messages": 1},
            "plain/none": {"orders": 2, "messages": 2},
            "plain/position": {"orders": 1, "messages": 2}}
