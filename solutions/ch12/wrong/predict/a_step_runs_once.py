"""A step's effect happens once: the mail, sent as a step, predicted to go
out once under the position key. Caught by
``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    said["step/position"] = {"requests": 1, "orders": 1, "messages": 1}
    return said
