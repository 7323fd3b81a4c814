"""WRONG ANSWER to exercise 08.2 (chapter 08): the prediction written when it
is compared with the race.

The mistake: a workflow left waiting for its approval taken for a failure
(the winner exits 1), handed back in a mapping that, compared with what the
race left in the rows, takes the outcome for its own and agrees. The
prediction is written after the outcome is seen. Caught by the seal
(exercises' conftest: what a prediction returns is recorded as plain data
when it returns), in ``test_without_an_approval_the_winner_waits``.
"""


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
