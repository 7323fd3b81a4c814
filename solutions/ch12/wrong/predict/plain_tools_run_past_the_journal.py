"""Plain tools run again, so the adapter's order is requested again (folded
by its action key into one order). Caught by
``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    said["plain/action"] = {"requests": 2, "orders": 1, "messages": 1}
    return said
