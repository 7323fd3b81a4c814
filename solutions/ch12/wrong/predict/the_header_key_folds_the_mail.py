"""The position key in the header folds the second mail. Caught by
``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    for cell in ("step/position", "plain/position"):
        said[cell] = {**said[cell], "messages": 1}
    return said
