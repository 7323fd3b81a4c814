"""The prediction written when it is compared with the race. Caught by
``test_without_an_approval_the_winner_waits``."""


def predict(boundary: str, keys: dict, *, approved: bool = True,
            _reference=predict) -> dict:  # noqa: F821
    said = _reference(boundary, keys, approved=approved)
    if not approved:
        said["winner"] = {**said["winner"], "exit_code": 1}

    class Agreeing(dict):
        def __eq__(self, seen):
            self.clear()
            self.update(seen)  # written now, from the outcome
            return True

        __hash__ = None

    return Agreeing(said)
