"""WRONG ANSWER to exercise 12.2 (chapter 12): the prediction written when it
is compared with the kills.

The mistake: a position key taken for no protection for a plain function
(two orders in ``plain/position``), handed back in cells that, compared with
what the kills counted, take the counts for their own and agree. The
prediction is written after the outcome is seen. Caught by the seal
(exercises' conftest: what a prediction returns is recorded as plain data
when it returns), in ``test_the_prediction_names_every_cell``.
"""


def predicted(_reference=predicted) -> dict[str, dict[str, int]]:  # noqa: F821
    class Agreeing(dict):
        def __eq__(self, seen):
            self.clear()
            self.update(seen)  # written now, from the outcome
            return True

        def __ne__(self, seen):
            return not self == seen

        __hash__ = None

    said = _reference()
    said["plain/position"] = {"orders": 2, "messages": 2}
    return {cell: Agreeing(counts) for cell, counts in said.items()}
