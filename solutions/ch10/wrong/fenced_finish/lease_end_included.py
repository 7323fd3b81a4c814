"""The lease's last instant kept. Caught by
``test_the_instant_a_lease_ends_belongs_to_the_next_claimer``."""


FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND status = '{RUNNING}' AND expires >= {SERVER_NOW}
"""
