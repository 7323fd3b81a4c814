"""A kill after the remote call treated like a kill before it (the step in doubt run
again, as if its attempt row said nothing happened). Caught by
``test_a_kill_after_the_last_call`` and
``test_without_an_approval_a_reservation_already_made_is_kept``."""


def happened(where, step, approved):
    return False  # no probe: the step at the boundary is run again
