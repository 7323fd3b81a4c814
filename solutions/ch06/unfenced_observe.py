"""Exercise 06.2 answer: remove one fence from a copy, then put it back."""

from __future__ import annotations

import json
import sqlite3

from crashcourse import fence
from crashcourse.claims import Claim

INSERT = ("INSERT INTO transcript (work_id, generation, message)"
          " VALUES (:work_id, :generation, :message)")


def params(claim: Claim, message: dict) -> dict:
    return {"work_id": claim.id, "generation": claim.generation,
            "message": json.dumps(message, sort_keys=True, allow_nan=False)}


def observe_unfenced(conn: sqlite3.Connection, claim: Claim, message: dict) -> int:
    """The broken copy: nobody asks whether ``claim`` is still the live claim."""
    return conn.execute(INSERT, params(claim, message)).lastrowid


def observe_restored(conn: sqlite3.Connection, claim: Claim, message: dict) -> int:
    """The check and the insert in one fenced transaction."""
    with fence.fenced(conn, claim, "observe"):
        return conn.execute(INSERT, params(claim, message)).lastrowid
