"""The worker's clock. Caught by
``test_the_databases_clock_decides_not_the_workers``."""

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
