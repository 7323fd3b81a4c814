"""WRONG ANSWER to exercise 07.2 (chapter 07): grouped, then sorted by name.

The mistake: ``sorted(steps, key=(irreversible, gate, action))``. The groups
come out right, but inside each group the steps are ordered by their action's
name, not kept in the plan's order: an "archive" rename the plan put after a
"rename" moves before it. A fixture whose steps are already alphabetical
inside each group cannot tell the two apart.
Caught by ``test_drawn_plans_are_grouped_in_their_own_order``.
"""


def reorder(steps: list) -> list:
    # reversible work (0), gates (1), irreversible steps (2); then by name
    ordered = sorted(steps, key=lambda s: (2 if s.irreversible else int(s.gate),
                                           s.action))
    return [Step(n, s.action, s.args, s.irreversible, s.gate)
            for n, s in enumerate(ordered, start=1)]
