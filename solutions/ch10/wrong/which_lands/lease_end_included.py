"""WRONG ANSWER to exercise 10.2 (chapter 10): a write at the lease's end lands.

The mistake: ``at <= expires``. At the instant the lease ends the work may be
claimed by another host (a claim picks ``expires <= now``), so the fence
refuses a write arriving exactly then ("lease expired"): the two never share
an instant.
Caught by ``at_the_instant_the_lease_ends`` (a history written out; the drawn
histories seldom land a write exactly on a lease's end).
"""


def in_lease(row, write):
    return write.at <= row["expires"]
