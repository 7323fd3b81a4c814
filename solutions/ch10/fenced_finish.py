"""Exercise 10.1: the fence in one statement (chapter 10). Reference answer.

The fence is the ``WHERE`` clause: the row is written only if, at the
instant the database applies the change, it still names this claim (work
id, generation, owner), is RUNNING, and its lease ends after the database's
own now. One statement: no other transaction can change the row between
the check and the write, and no worker's clock is asked.
"""

from __future__ import annotations

from crashcourse.claims import DONE, RUNNING, Claim

# The database's clock as seconds since the epoch, read when the statement
# runs: the same clock every lease in the store was written with.
SERVER_NOW = "extract(epoch FROM clock_timestamp())"

FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE
    -- this claim: the same work, generation and owner
        id = :id
    AND generation = :generation
    AND owner = :owner
    -- still held, and held now, by the database's clock
    AND status = '{RUNNING}'
    AND expires > {SERVER_NOW}
"""


def finish(conn, claim: Claim, outcome: str) -> bool:
    """Set ``claim``'s work DONE with ``outcome`` if ``claim`` is still the
    live claim; whether the row was written."""
    written = conn.execute(FINISH, {"outcome": outcome, "id": claim.id,
                                    "generation": claim.generation,
                                    "owner": claim.owner})
    return written.rowcount == 1
