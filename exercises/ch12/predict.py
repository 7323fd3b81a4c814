"""Exercise 12.2: predict the cells of a variant the chapter did not run.

The chapter measured DBOS with every tool call a step. Here the same
workflow runs its tools as PLAIN functions inside the workflow
(``python -m crashcourse.workers.frameworks.dbos_agent --tools plain``):
what DBOS's documentation warns against for I/O, and what Pydantic AI does
with a tool nobody decorated. The model's turns are still DBOS steps, so
each one's answer, the tool call's id included, is recorded.

Predict how many orders the supplier holds once DBOS has recovered the
workflow after each of these kills, for two keys:

* ``none``: a fresh random ``Idempotency-Key`` per request;
* ``position``: the workflow id and the model's tool-call id;

and two kill points of the order's tool:

* ``after_ack``: the supplier answered 201; the tool has not returned;
* ``after_record``: the workflow went on (the model's next turn is recorded
  in DBOS's own database) and the process is killed right before the mail.

Return ``{"none/after_ack": n, "none/after_record": n,
"position/after_ack": n, "position/after_record": n}``. The tests run the
four kills for real and compare.
"""

from __future__ import annotations


def predicted() -> dict[str, int]:
    """Orders at the supplier after each kill and DBOS's recovery."""
    raise NotImplementedError("exercise 12.2: predict, then let the tests run it")
