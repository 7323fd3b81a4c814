"""Exercise 12.1: a key that survives a re-asked model (chapter 12).

A framework that lost its record of a model turn asks the model again, and
the model answers with the same tool call under a NEW id (``call_…``): every
real model mints one per call. A key built from that id is a new key, and
the supplier takes the second request for a second order.

Write ``action_key(task, call)``: the ``Idempotency-Key`` the shop's
``place_order`` tool sends for ``call``, a tool call as a model emits it,
``{"id": "call_…", "name": "place_order", "args": {...}}``, made for the
agent's ``task`` (``"restock-flour-0042"``).

* The same task, tool and arguments give the same key, whatever the call's
  id, whatever order the arguments' fields come in, in any process.
* Another task, another tool or any other argument gives another key.
* The supplier accepts it: 1 to 200 characters of letters, digits and
  ``._~:@+=/-`` (``crashcourse.services.supplier.request.usable_key``).
"""

from __future__ import annotations


def action_key(task: str, call: dict) -> str:
    """The supplier's key for the action ``call`` asks for, made for ``task``."""
    raise NotImplementedError("exercise 12.1: a key from the action, not the call id")
