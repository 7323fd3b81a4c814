"""The worker's clock, read so that patching ``time.time`` does not see it. Caught by
``test_the_databases_clock_decides_not_the_workers``."""

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
