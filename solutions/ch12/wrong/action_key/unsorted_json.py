"""WRONG ANSWER to exercise 12.1 (chapter 12): the arguments hashed as they come.

The mistake: ``json.dumps`` without ``sort_keys`` writes the fields in the
order the model happened to emit them. A model asked again may put
``quantity`` before ``sku``: the same order, another key. Caught by
``test_the_order_of_the_fields_changes_nothing``.
"""


import hashlib
import json


def action_key(task: str, call: dict) -> str:
    """The supplier's key for the action ``call`` asks for, made for ``task``."""
    body = json.dumps([task, call["name"], call["args"]])
    return f"{task}/{call['name']}/{hashlib.sha256(body.encode()).hexdigest()[:16]}"
