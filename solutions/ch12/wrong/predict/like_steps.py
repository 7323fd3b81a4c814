"""Plain tools read as steps. Caught by ``test_the_prediction_matches_the_kills``."""


def predicted() -> dict[str, dict[str, int]]:
    return {"step/none": {"orders": 1, "messages": 2},
            "step/position": {"orders": 1, "messages": 2},
            "plain/none": {"orders": 1, "messages": 2},
            "plain/position": {"orders": 1, "messages": 2}}
