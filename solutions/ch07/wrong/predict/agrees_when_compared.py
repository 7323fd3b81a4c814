"""WRONG ANSWER to exercise 07.3 (chapter 07): the prediction written when it
is compared with the journal.

The mistake: an outcome counted as confirmed the moment it is written (a step
killed ``after_outcome`` is no longer in doubt), handed back in a mapping that,
compared with what the journal showed, takes the journal's counts for its own
and agrees. Whatever the kill shows, it "predicted" it: the prediction is
written after the outcome is seen. Caught by the seal (exercises' conftest:
what a prediction returns is recorded as plain data when it returns), in
``test_predictions_on_paper``.
"""


def predict(k: int, boundary: str, plan, _reference=predict) -> dict:  # noqa: F821
    said = _reference(k, boundary, plan)
    if boundary == "after_outcome" and said["in_doubt"]:
        said = {**said, "confirmed": said["confirmed"] + 1, "in_doubt": 0}

    class Agreeing(dict):
        def __eq__(self, seen):
            self.clear()
            self.update(seen)  # written now, from the outcome
            return True

        __hash__ = None

    return Agreeing(said)
