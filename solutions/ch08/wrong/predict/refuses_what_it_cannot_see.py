"""WRONG ANSWER to exercise 08.2 (chapter 08): the admissions refused.

The mistake: a kill at ``admitted:STEP`` ("the call may or may not have
left") is declared unpredictable and refused with ValueError, as a boundary
that does not exist would be. It is a boundary the worker reaches, and the
race after it has one outcome: the winner waits out the lease, asks the
service, and goes on from its answer.
Caught by ``test_every_reachable_boundary_has_a_prediction``.
"""


def predict(boundary: str, keys: dict, *, approved: bool = True,
            _solved=predict) -> dict:
    if boundary.startswith("admitted:"):
        raise ValueError(f"cannot say what happens after {boundary}")
    return _solved(boundary, keys, approved=approved)
