"""``now()`` for the clock. Caught by
``test_a_write_that_waited_for_the_row_is_judged_when_it_lands``."""


SERVER_NOW = "extract(epoch FROM now())"

FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND status = '{RUNNING}' AND expires > {SERVER_NOW}
"""
