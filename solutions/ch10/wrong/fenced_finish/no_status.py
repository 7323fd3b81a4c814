"""WRONG ANSWER to exercise 10.1 (chapter 10): the status left out.

The mistake: "the runtime clears ``expires`` whenever work stops running, so
the lease check covers the status". It leans on every other writer keeping
that habit: a row set BLOCKED (or back to READY) by a tool that left its lease
on is not RUNNING, and the holder's DONE lands over it.
Caught by ``test_every_part_of_the_fence_refuses_on_its_own``.
"""


FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND expires > {SERVER_NOW}
"""
