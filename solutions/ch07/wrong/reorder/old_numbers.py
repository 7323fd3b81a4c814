"""The steps keep their old numbers. Caught by
``test_reorder_groups_keeps_order_and_renumbers``."""


def reorder(steps: list) -> list:
    """Reversible steps, then gates, then irreversible ones."""
    groups = (
        [s for s in steps if not s.gate and not s.irreversible],
        [s for s in steps if s.gate and not s.irreversible],
        [s for s in steps if s.irreversible],
    )
    ordered = [s for group in groups for s in group]
    return ordered  # each step keeps its number
