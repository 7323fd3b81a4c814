"""WRONG ANSWER to exercise 08.2 (chapter 08): after the call, it happened.

The mistake: a kill at ``after_remote:<step>`` is read as "the effect
exists", whatever the service answered. With the charge approved that is
so, and every approved case is predicted right. Without an approval the
payment service refused the charge and made no payment: the probe finds
nothing, and the winner attempts the charge again (refused again, the
workflow waits). This answer has the winner record the probe's outcome and
attempt nothing. Caught by
``test_without_an_approval_the_winner_waits[after_remote:charge]`` and the
unapproved real race.
"""


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
        happened = where == "after_remote"  # the call was made, so it happened
        if happened:  # the probe finds the effect: one outcome settles it
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
        "loser": {"exit_code": EXIT["refused"], "refused": STALE_VERSION,
                  "transitions": []},
        "final_state": APPLIED if approved else WAITING,
        # unapproved, only the reservation happened: a refused charge is no
        # payment, and the mail is never reached
        "service_ops": {keys[step]: int(approved or step == "reserve")
                        for step in STEPS},
    }
