"""The generation alone. Caught by
``test_a_lapsed_lease_is_refused_though_nobody_took_the_work`` and
``test_another_owner_with_the_same_generation_is_refused`` and
``test_a_finished_claim_cannot_finish_twice``."""


FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id
  AND generation = :generation
"""


def finish(conn, claim: Claim, outcome: str) -> bool:
    written = conn.execute(FINISH, {"outcome": outcome, "id": claim.id,
                                    "generation": claim.generation})
    return written.rowcount == 1
