"""A correct answer written without chapter 01's helper: a SHA-256 of the
task, the tool's name and its arguments as canonical JSON (sorted keys, no
spaces). Not the reference's bytes, the same properties: the id left out,
the field order irrelevant, another action another key."""

import hashlib
import json


def action_key(task: str, call: dict) -> str:
    canonical = json.dumps([task, call["name"], call["args"]], sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
