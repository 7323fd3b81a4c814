"""The prediction written when it is compared with the kills. Caught by
``test_the_prediction_names_every_cell``."""


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
    said["plain/position"] = {"requests": 1, "orders": 1, "messages": 2}
    return {cell: Agreeing(counts) for cell, counts in said.items()}
