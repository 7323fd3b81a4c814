"""The model is asked again: a new call id, so a new position key and a
second order. Caught by ``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    said["plain/position"] = {"requests": 2, "orders": 2, "messages": 2}
    return said
