"""WRONG ANSWER to exercise 10.1 (chapter 10): the worker's clock.

The mistake: the lease is compared with ``time.time()``, the clock of the
host the worker runs on, passed in as ``:now``. The statement is one UPDATE
and the fence is in its WHERE clause, but it asks the wrong clock: a worker
an hour fast refuses its own live claim, and one an hour slow still writes
an hour after its lease ended, while another host may hold the work. Every
lease in the store was written by the database's clock; compare with that.
Caught by ``test_the_databases_clock_decides_not_the_workers``.
"""


import time

FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = :now
WHERE id = :id
  AND generation = :generation
  AND owner = :owner
  AND status = '{RUNNING}'
  AND expires > :now
"""


def finish(conn, claim: Claim, outcome: str) -> bool:
    written = conn.execute(FINISH, {"outcome": outcome, "id": claim.id,
                                    "generation": claim.generation,
                                    "owner": claim.owner, "now": time.time()})
    return written.rowcount == 1
