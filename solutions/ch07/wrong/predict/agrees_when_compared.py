"""The prediction written when it is compared with the journal. Caught by
``test_predictions_on_paper``."""


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
