"""Plain tools read as steps: the order, finished before the kill, predicted
not to be requested again. Caught by ``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    said["plain/position"] = {"requests": 1, "orders": 1, "messages": 2}
    return said
