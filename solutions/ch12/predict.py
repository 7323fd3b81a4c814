"""Exercise 12.2: predict the cells of a kill the chapter did not make.

Reference answer. DBOS recovers a workflow by running its code again from
the top, handing back the recorded output of every step that finished. The
kill comes after the provider accepted the confirmation and before the mail
tool returned, so nothing recorded that the mail went: the mail runs again
in every cell, and the provider, which takes no key, holds two messages.
The order ran earlier. As a step its output was recorded (and the model's
next turn after it): it is handed back, not run, so one order under either
key. As a plain function it has no record and runs again: a random key
orders twice; the position key (the recorded call id) sends the same key,
and the supplier answers the second request with the first order.
"""

from __future__ import annotations


def predicted() -> dict[str, dict[str, int]]:
    """Orders at the supplier and messages at the provider, per cell."""
    return {"step/none": {"orders": 1, "messages": 2},
            "step/position": {"orders": 1, "messages": 2},
            "plain/none": {"orders": 2, "messages": 2},
            "plain/position": {"orders": 1, "messages": 2}}
