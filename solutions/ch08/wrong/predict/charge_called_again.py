"""After the charge, charge again. Caught by
``test_the_prediction_matches_the_real_race``."""


def predict(boundary: str, keys: dict, *, approved: bool = True,
            _solved=predict) -> dict:
    if approved and boundary == "after_remote:charge":
        boundary = "before_remote:charge"
    return _solved(boundary, keys, approved=approved)
