"""WRONG ANSWER to exercise 10.2 (chapter 10): a lease is a lease.

The mistake: a write lands if it reaches the database before ITS OWN
claim's lease ends. Claims are only granted on lapsed leases, so this gets
every claim-after-claim history right, which is what makes it tempting. But
a lease is permission to act only while the claim is still the work's live
one: the operator's cancel moves the generation on at once, and a write
under the cancelled claim is refused although its lease still runs.
Caught by ``cancelled_in_the_middle_of_a_lease``.
"""


def lands(history: list) -> list[bool]:
    leases, verdicts = [], []
    for event in history:
        if isinstance(event, Claimed):
            leases.append(event.at + event.ttl)
        elif isinstance(event, Wrote):  # its own claim's lease, cancelled or not
            verdicts.append(event.at < leases[event.generation - 1])
    return verdicts
