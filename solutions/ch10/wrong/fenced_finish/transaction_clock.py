"""WRONG ANSWER to exercise 10.1 (chapter 10): ``now()`` for the clock.

The mistake: ``expires > extract(epoch FROM now())``. It is the database's
clock, and one statement, but ``now()`` is the instant the transaction BEGAN,
not the instant the row is written. An UPDATE that waited behind another
writer's lock on the row is judged, when PostgreSQL re-reads the row after the
wait, against the time it started: a lease that ended during the wait still
lets the write in.
Caught by ``test_a_write_that_waited_for_the_row_is_judged_when_it_lands``.
"""


SERVER_NOW = "extract(epoch FROM now())"

FINISH = f"""
UPDATE work
SET status = '{DONE}', outcome = :outcome, expires = NULL, finished = {SERVER_NOW}
WHERE id = :id AND generation = :generation AND owner = :owner
  AND status = '{RUNNING}' AND expires > {SERVER_NOW}
"""
