"""Every step in doubt waits for its lease. Caught by
``test_the_plan_is_what_the_runtime_then_does[killed:before_remote:reserve]``."""


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    """A step in doubt settled by its rows, or None where the probe decides:
    no attempt since its last outcome admitted, nothing to undo (the cancel
    moved the version: ``admit`` refuses it for ever); an admitted call whose
    lease is live at ``at``, wait; an admitted call after its lease, None."""
    if max(a["expires"] for a in step["attempts"]) > at:  # admitted or not
        return WAIT
    if not any(a["admitted_at"] is not None for a in step["attempts"]):
        return NOTHING
    return None
