"""WRONG ANSWER to exercise 08.2 (chapter 08): after the charge, charge again.

The mistake: a kill after the payment service answered is predicted like a
kill before the call: "the worker never recorded the outcome, so the winner
attempts the charge again". With the approval given, the winner asks the
payment service by the charge's key first, finds the payment, and writes one
outcome row: no second attempt, one payment.
Caught by ``test_the_prediction_matches_the_real_race``.
"""


def predict(boundary: str, keys: dict, *, approved: bool = True,
            _solved=predict) -> dict:
    if approved and boundary == "after_remote:charge":
        boundary = "before_remote:charge"
    return _solved(boundary, keys, approved=approved)
