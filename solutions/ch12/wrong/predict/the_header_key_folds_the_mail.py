"""WRONG ANSWER to exercise 12.2 (chapter 12): the position key folds the second mail.

The mistake: the position key survives recovery, so the second mail carries
the first one's key, and that is taken to make it harmless, as it is at the
supplier. The mail provider takes no key: the header makes a duplicate
findable by a probe, never impossible, and nothing here probes. Two messages
under either key. Caught by ``test_the_prediction_matches_the_kills``.
"""


def predicted() -> dict[str, dict[str, int]]:
    """Orders at the supplier and messages at the provider, per cell."""
    return {"step/none": {"orders": 1, "messages": 2},
            "step/position": {"orders": 1, "messages": 1},
            "plain/none": {"orders": 2, "messages": 2},
            "plain/position": {"orders": 1, "messages": 1}}
