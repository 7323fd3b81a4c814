"""WRONG ANSWER to exercise 10.2 (chapter 10): the writer's own clock.

The mistake: a write is judged by ``local_clock``, what the worker's host
said the time was, as a worker judges its own lease ("I still have ten
seconds"). Newest claim, owner and cancel are all checked; the clock is the
wrong one. The fence compares the lease with the database's instant, so a
holder whose clock runs slow believes in a lease that ended, and one whose
clock runs fast gives up a live one.
Caught by ``a_fast_clock_on_a_live_claim`` and ``lapsed_and_nobody_took_it``.
"""


def in_lease(row, write):
    return write.local_clock < row["expires"]  # the worker's host, not the database
