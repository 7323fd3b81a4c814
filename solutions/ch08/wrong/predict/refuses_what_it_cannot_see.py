"""The admissions refused. Caught by
``test_every_reachable_boundary_has_a_prediction``."""


def predict(boundary: str, keys: dict, *, approved: bool = True,
            _solved=predict) -> dict:
    if boundary.startswith("admitted:"):
        raise ValueError(f"cannot say what happens after {boundary}")
    return _solved(boundary, keys, approved=approved)
