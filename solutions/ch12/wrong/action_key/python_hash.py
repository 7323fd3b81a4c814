"""WRONG ANSWER to exercise 12.1 (chapter 12): Python's ``hash`` as the digest.

The mistake: ``hash()`` of a string is salted per process
(``PYTHONHASHSEED``), so the key is stable inside one process and differs in
the next one, which is exactly the one that resumes after a kill. Caught by
``test_another_process_computes_the_same_key``.
"""


import json


def action_key(task: str, call: dict) -> str:
    """The supplier's key for the action ``call`` asks for, made for ``task``."""
    digest = hash(json.dumps([task, call["name"], call["args"]], sort_keys=True))
    return f"{task}/{call['name']}/{digest & 0xFFFFFFFFFFFFFFFF:016x}"
