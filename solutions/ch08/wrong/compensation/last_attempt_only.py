"""WRONG ANSWER to exercise 08.3 (chapter 08): only the last attempt asked.

The mistake: a step in doubt is judged by its LAST attempt alone: not
admitted, nothing to undo. But an earlier attempt of the same step may have
been admitted and its call may have left (the worker died after its
admission; a replacement wrote a new attempt and was stopped before its own).
The effect can exist whatever the last attempt says: once every admitted
attempt's lease is over, the probe decides.
Caught by ``test_an_earlier_admitted_attempt_is_not_forgotten``.
"""


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    last = step["attempts"][-1]
    if last["admitted_at"] is None:
        return NOTHING
    if last["expires"] > at:
        return WAIT
    return None
