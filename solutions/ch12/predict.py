"""Exercise 12.2: predict the cells of a variant the chapter did not run.

Reference answer. A plain tool has no record of its own: DBOS recovers a
workflow by running its code again from the top, handing back the recorded
output of every step. The model's turns are steps, so the same tool calls
come back under the same ids; the plain tools between them run again, every
one of them, whatever was recorded after them. So ``none`` orders twice at
both kill points, and ``position`` (the recorded call id) sends the same key
again: the supplier answers its second request with the first order.
"""

from __future__ import annotations


def predicted() -> dict[str, int]:
    """Orders at the supplier after each kill and DBOS's recovery."""
    return {"none/after_ack": 2, "none/after_record": 2,
            "position/after_ack": 1, "position/after_record": 1}
