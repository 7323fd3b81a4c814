"""The provider takes no key, so even behind the adapter the mail goes twice.
Caught by ``test_the_prediction_matches_the_kills``."""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    said = _reference()
    for cell in ("step/action", "plain/action"):
        said[cell] = {**said[cell], "messages": 2}
    return said
