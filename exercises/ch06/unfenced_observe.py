"""Exercise 06.2: remove one fence from a copy, then put it back."""

from __future__ import annotations

import json  # noqa: F401
import sqlite3

from crashcourse import fence  # noqa: F401
from crashcourse.claims import Claim


def observe_unfenced(conn: sqlite3.Connection, claim: Claim, message: dict) -> int:
    """A copy of ``fence.observe`` WITHOUT the current-holder check.

    Insert one ``transcript`` row (work id, the claim's generation, the message
    as JSON) and return its ``seq``. This is the broken version on purpose.
    """
    raise NotImplementedError("exercise 06.2: write observe_unfenced")


def observe_restored(conn: sqlite3.Connection, claim: Claim, message: dict) -> int:
    """The same write with the fence back: refused (``fence.StaleClaim``) and
    absent unless ``claim`` is the live claim. Do not call ``fence.observe``:
    rebuild it from ``fence.fenced``."""
    raise NotImplementedError("exercise 06.2: write observe_restored")
