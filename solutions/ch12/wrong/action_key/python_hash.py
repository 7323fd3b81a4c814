"""Python's ``hash`` as the digest. Caught by
``test_another_process_computes_the_same_key``."""

import json


def action_key(task: str, call: dict) -> str:
    digest = hash(json.dumps([task, call["name"], call["args"]], sort_keys=True))
    return f"{task}/{call['name']}/{digest & 0xFFFFFFFFFFFFFFFF:016x}"
