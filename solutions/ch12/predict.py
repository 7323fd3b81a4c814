"""Exercise 12.2: predict the cells of a kill the chapter did not make.

Reference answer. DBOS recovers a workflow by running its code again from
the top, handing back the recorded output of every step that finished. The
kill comes after the provider accepted the confirmation and before the mail
tool returned. The order ran earlier. As a step its output was recorded: it
is handed back, not run, so the supplier had one request. As a plain
function it has no record and runs again: under the position key (the
recorded call id) the same key goes out a second time, two requests, and
the supplier answers the second with the first order. The mail runs again
in every cell. Under the position key nothing stops it: the provider takes
no key, two messages. Behind the adapter (the action key) the journal
stands in for DBOS's missing record: the order's outcome is in it, so even
as a plain function the order is answered from the journal and not
requested again; the mail's intent is in it with no outcome, so the adapter
probes the provider by the header's key, finds the message, and sends none.
"""

from __future__ import annotations


def predicted() -> dict[str, dict[str, int]]:
    """Order requests and orders at the supplier, messages at the provider,
    per cell."""
    return {"step/position": {"requests": 1, "orders": 1, "messages": 2},
            "plain/position": {"requests": 2, "orders": 1, "messages": 2},
            "step/action": {"requests": 1, "orders": 1, "messages": 1},
            "plain/action": {"requests": 1, "orders": 1, "messages": 1}}
