"""WRONG ANSWER to exercise 07.2 (chapter 07): the steps keep their old numbers.

The mistake: the groups are right and in the right order, but each step
keeps the number it had in the planner's list. The plan now reads "step 3,
step 6, step 4, ...", and the journal's rows, which refer to steps by
number, no longer describe the order they run in: "the last row is 5" says
nothing about what came before. Caught by
``test_reorder_groups_keeps_order_and_renumbers``.
"""


def reorder(steps: list) -> list:
    """Reversible steps, then gates, then irreversible ones."""
    groups = (
        [s for s in steps if not s.gate and not s.irreversible],
        [s for s in steps if s.gate and not s.irreversible],
        [s for s in steps if s.irreversible],
    )
    ordered = [s for group in groups for s in group]
    return ordered  # each step keeps its number
