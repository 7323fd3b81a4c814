"""A correct answer in another shape: one stable sort by the step's group
(reversible, then gates, then irreversible, a gate that is irreversible
counting as irreversible), which keeps each group in the plan's order, then
renumbered."""


def reorder(steps: list) -> list:
    def group(step) -> int:
        return 2 if step.irreversible else 1 if step.gate else 0

    ordered = sorted(steps, key=group)  # stable: ties keep the plan's order
    return [Step(n, s.action, s.args, s.irreversible, s.gate)
            for n, s in enumerate(ordered, start=1)]
