"""WRONG ANSWER to exercise 08.2: a kill at ``after_remote:<step>`` read as "the
effect exists", whatever the service answered. Right for every approved
case; without an approval the payment service made no payment, the probe
finds nothing, and the winner attempts the charge again. Caught by
``test_without_an_approval_the_winner_waits`` and the unapproved real race.
"""


def happened(where, step, approved):
    return where == "after_remote"  # the call was made, so it happened
