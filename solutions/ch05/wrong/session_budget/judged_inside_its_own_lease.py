"""The chapter's ``note`` copied whole, ``now=claim.expires - 1`` and all: the lease
judged one second before its own end, for ever. Caught by
``test_a_lease_that_ran_out_on_the_clock_reserves_nothing``."""


def guarded(conn, claim):
    return fence.fenced(conn, claim, "reserve", now=claim.expires - 1)
