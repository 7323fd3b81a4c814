"""The arguments hashed as they come. Caught by
``test_the_order_of_the_fields_changes_nothing``."""

import hashlib
import json


def action_key(task: str, call: dict) -> str:
    body = json.dumps([task, call["name"], call["args"]])
    return f"{task}/{call['name']}/{hashlib.sha256(body.encode()).hexdigest()[:16]}"
