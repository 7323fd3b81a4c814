"""Only the last attempt asked. Caught by
``test_an_earlier_admitted_attempt_is_not_forgotten``."""


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    last = step["attempts"][-1]
    if last["admitted_at"] is None:
        return NOTHING
    if last["expires"] > at:
        return WAIT
    return None
