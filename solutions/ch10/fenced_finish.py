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


def names_this_claim() -> str:
    """The row is this claim's: the same work, generation and owner."""
    return "id = :id AND generation = :generation AND owner = :owner"


def still_running() -> str:
    """The work is still held: RUNNING, whatever else the row says."""
    return f"status = '{RUNNING}'"


def lease_live() -> str:
    """The lease ends after the database's now (its end belongs to the next
    claimer, whose pick is ``expires <= now``)."""
    return f"expires > {SERVER_NOW}"


def fence_clause() -> str:
    """The whole fence: each part refuses on its own."""
    return f"{names_this_claim()} AND {still_running()} AND {lease_live()}"


def finish_statement() -> str:
    """The one UPDATE: DONE, the outcome, the lease cleared, the finish
    stamped by the database's clock, only where the fence holds."""
    return (f"UPDATE work SET status = '{DONE}', outcome = :outcome,"
            f" expires = NULL, finished = {SERVER_NOW} WHERE {fence_clause()}")


def claim_parameters(claim: Claim, outcome: str) -> dict:
    """What the statement binds: the outcome and the claim's three names."""
    return {"outcome": outcome, "id": claim.id,
            "generation": claim.generation, "owner": claim.owner}


def finish(conn, claim: Claim, outcome: str) -> bool:
    """Set ``claim``'s work DONE with ``outcome`` if ``claim`` is still the
    live claim; whether the row was written."""
    written = conn.execute(finish_statement(), claim_parameters(claim, outcome))
    return written.rowcount == 1
