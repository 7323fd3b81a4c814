"""WRONG ANSWER to exercise 10.1 (chapter 10): the generation alone.

The mistake: "a newer claim bumps the generation, so comparing generations
is the fence". It refuses a superseded holder, but not a holder whose lease
ran out while nobody has claimed the work yet (the row still says its
generation), nor a claim presented under another owner, nor one that has
already finished. A lapsed lease is permission for another host to take the
work at any moment; a write made then can race that claim.
Caught by ``test_a_lapsed_lease_is_refused_though_nobody_took_the_work``,
``test_another_owner_with_the_same_generation_is_refused`` and
``test_a_finished_claim_cannot_finish_twice``.
"""


from crashcourse.claims import DONE, Claim

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
