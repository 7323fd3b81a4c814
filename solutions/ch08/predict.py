"""Exercise 08.2, answered: predict the race after a kill (chapter 08).

The killed worker's rows say where recovery starts: ``run`` made version 1,
and each step before the one at the boundary made two (attempt, outcome),
so a kill at step i (0, 1, 2) leaves version 2 + 2i with that step in doubt.
The winner asks the service first: after the call the effect is there
(unless the payment service refused it for want of an approval), and one
outcome row settles the step; before the call it is not, and the step is
attempted and called again, once. The loser holds the same version, so its
first write is refused as stale, and it exits 3.
"""

from __future__ import annotations

from crashcourse.workers.workflow_worker import BOUNDARIES, EXIT
from crashcourse.workflow import APPLIED, PENDING, RUNNING, STALE_VERSION, WAITING

STEPS = ("reserve", "charge", "mail")


def predict(boundary: str, keys: dict, *, approved: bool = True) -> dict:
    """The winner's transitions, the loser's refusal, the final state and
    each service's count of each operation key (chapter 08)."""
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}, got {boundary!r}")
    if not isinstance(keys, dict) or set(keys) != set(STEPS):
        raise ValueError(f"keys must map exactly the steps {STEPS}")
    reached = STEPS if approved else STEPS[:2]  # unapproved, the charge waits
    if boundary != "after_read" and boundary.split(":")[1] not in reached:
        raise ValueError(f"a worker without an approval never reaches {boundary}")
    transitions: list[dict] = []

    def write(from_state: str, to_state: str, note: str) -> None:
        transitions.append({"version": version + len(transitions) + 1,
                            "from_state": from_state, "to_state": to_state,
                            "note": note})

    if boundary == "after_read":  # the killed worker wrote nothing
        version, left = 0, list(reached)
        write(PENDING, RUNNING, "run")
    else:
        where, step = boundary.split(":")
        at = STEPS.index(step)
        version, left = 2 + 2 * at, list(reached[at:])
        if happened(where, step, approved):  # one outcome settles it
            write(RUNNING, RUNNING, f"outcome {step}")
            left.pop(0)
    for step in left:
        write(RUNNING, RUNNING, f"attempt {step}")
        if step == "charge" and not approved:
            write(RUNNING, WAITING, "outcome charge")
            break
        write(RUNNING, RUNNING, f"outcome {step}")
    else:
        write(RUNNING, APPLIED, "every step done")
    return {
        "winner": {"exit_code": EXIT["finished"], "transitions": transitions},
        "loser": loser(),
        "final_state": APPLIED if approved else WAITING,
        # unapproved, only the reservation happened: a refused charge is no
        # payment, and the mail is never reached
        "service_ops": {keys[step]: int(approved or step == "reserve")
                        for step in STEPS},
    }


def happened(where: str, step: str, approved: bool) -> bool:
    """Whether the winner's probe finds the effect of the step the kill
    interrupted: after the call it is there, unless the payment service
    refused the charge for want of an approval; before it, it is not."""
    return where == "after_remote" and (approved or step != "charge")


def loser() -> dict:
    """The loser holds the version the winner moved: its first write is
    refused as stale, and it exits 3, having written nothing."""
    return {"exit_code": EXIT["refused"], "refused": STALE_VERSION,
            "transitions": []}
