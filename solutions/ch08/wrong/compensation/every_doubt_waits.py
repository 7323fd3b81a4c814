"""WRONG ANSWER to exercise 08.3 (chapter 08): every step in doubt waits for
its lease.

The mistake: any attempt with a live lease is treated as a call that may be
in flight, admitted or not. But an attempt never admitted cannot leave any
more: the cancel moved the workflow's version, and ``admit`` refuses a call
whose version is not the workflow's. The runtime writes ``nothing_to_undo``
at once; the plan keeps the person waiting for nothing. Caught by
``test_the_plan_is_what_the_runtime_then_does[killed:before_remote:reserve]``.
"""


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
