"""The status left out. Caught by
``test_every_part_of_the_fence_refuses_on_its_own``."""


FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND expires > {SERVER_NOW}
"""
