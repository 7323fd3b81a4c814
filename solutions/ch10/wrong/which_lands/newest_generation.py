"""WRONG ANSWER to exercise 10.2 (chapter 10): the newest claim may write.

The mistake: a write lands if its claim is the newest one on the work (and
the work not cancelled), whenever it arrives. That is the fence without its
clock. A holder cut off past the end of its lease, with no one else claiming
yet, still looks current; but its lease ran out, another host may claim the
work at any moment, and the fence refuses it ("lease expired").
Caught by ``lapsed_and_nobody_took_it``.
"""


def in_lease(row, write):
    return True  # no clock: the newest claim may always write
