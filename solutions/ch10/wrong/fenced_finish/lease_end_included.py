"""WRONG ANSWER to exercise 10.1 (chapter 10): the lease's last instant kept.

The mistake: ``expires >= now`` instead of ``expires > now``. At the very
instant the lease ends, a claimer may take the work (its pick is ``expires <=
now``), so for that instant both the old holder's write and the new claim
would be let in. The fence and the claim must split time with no overlap.
Caught by ``test_the_instant_a_lease_ends_belongs_to_the_next_claimer``.
"""


FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND status = '{RUNNING}' AND expires >= {SERVER_NOW}
"""
