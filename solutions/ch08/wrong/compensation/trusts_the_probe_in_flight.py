"""WRONG ANSWER to exercise 08.3 (chapter 08): the probe trusted while the
call may be in flight.

The mistake: a call that was admitted is settled by the probe at once, lease
or no lease. The worker is held after its admission to mail; the provider
has no message yet, so the probe says no, and the plan says "nothing to
undo" for a mail the worker sends a moment later. A compensation row is
written once, so the runtime writes none until the lease is over; the plan
must say so too. Caught by
``test_the_plan_is_what_the_runtime_then_does[held:admitted:mail]``.
"""


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    """A step in doubt settled by its rows, or None where the probe decides:
    no attempt since its last outcome admitted, nothing to undo (the cancel
    moved the version: ``admit`` refuses it for ever); an admitted call whose
    lease is live at ``at``, wait; an admitted call after its lease, None."""
    admitted = [a for a in step["attempts"] if a["admitted_at"] is not None]
    if not admitted:
        return NOTHING
    return None
