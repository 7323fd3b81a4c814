"""A kill at ``after_remote:<step>`` read as "the effect exists", whatever the service
answered. Caught by ``test_without_an_approval_the_winner_waits``."""


def happened(where, step, approved):
    return where == "after_remote"  # the call was made, so it happened
