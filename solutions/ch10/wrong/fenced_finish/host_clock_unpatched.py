"""WRONG ANSWER to exercise 10.1 (chapter 10): the worker's clock, read so
that patching ``time.time`` does not see it.

The mistake: the lease is compared with ``datetime.now().timestamp()``, the
clock of the worker's host. A grader that only patches ``time.time`` to fake a
skew never moves this clock, so the answer looks right; on a host whose clock
really differs from the database's, the holder refuses its live claim (database
behind) or writes after its lease ended (database ahead).
Caught by ``test_the_databases_clock_decides_not_the_workers``.
"""


from datetime import datetime

FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND status = '{RUNNING}' AND expires > :now
"""


def finish(conn, claim: Claim, outcome: str) -> bool:
    written = conn.execute(FINISH, {"outcome": outcome, "id": claim.id,
                                    "generation": claim.generation,
                                    "owner": claim.owner,
                                    "now": datetime.now().timestamp()})
    return written.rowcount == 1
