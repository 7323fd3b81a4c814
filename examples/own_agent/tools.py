"""The project's tool, its probe, and its own progress file."""

import json
import os

import service

from crashcourse.boundary import boundary


def send_mail(body: str, *, operation_key: str) -> dict:
    service.send(body, operation_key)
    boundary("after_send")  # our own mark: sent, nothing recorded yet
    return {"sent": body}


def mailed(body: str, *, operation_key: str):
    return service.found(operation_key), {"sent": body}


def progress() -> dict:
    return json.load(open("state.json")) if os.path.exists("state.json") else {}


def record(state: dict) -> None:
    with open("state.json.tmp", "w") as out:
        json.dump(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace("state.json.tmp", "state.json")
