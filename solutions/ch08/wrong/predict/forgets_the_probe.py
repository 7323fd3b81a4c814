"""WRONG ANSWER to exercise 08.2: a kill after the remote call treated like a
kill before it (the step in doubt run again, as if its attempt row said
nothing happened). The runtime asks the service by the step's key first:
one outcome row settles the step. Caught by
``test_a_kill_after_the_last_call``,
``test_without_an_approval_a_reservation_already_made_is_kept`` and the real
race after ``after_remote:reserve``.
"""


def happened(where, step, approved):
    return False  # no probe: the step at the boundary is run again
