"""Grouped, then sorted by name. Caught by
``test_drawn_plans_are_grouped_in_their_own_order``."""


def reorder(steps: list) -> list:
    # reversible work (0), gates (1), irreversible steps (2); then by name
    ordered = sorted(steps, key=lambda s: (2 if s.irreversible else int(s.gate),
                                           s.action))
    return [Step(n, s.action, s.args, s.irreversible, s.gate)
            for n, s in enumerate(ordered, start=1)]
