"""WRONG ANSWER to exercise 08.2 (chapter 08): the step is simply run again.

The mistake: a kill after the remote call is treated like a kill before it.
The step in doubt has an attempt row and no outcome, so the winner is
predicted to attempt it and call the service again, as if the attempt row
said nothing had happened. The runtime asks the service by the step's
operation key first: after the call the effect is there, and one outcome row
(the probe's) settles the step, with no second attempt. Caught by
``test_a_kill_after_the_last_call``,
``test_without_an_approval_a_reservation_already_made_is_kept`` and the real
race after ``after_remote:reserve``.
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
        at = STEPS.index(boundary.split(":")[1])
        # the step at the boundary has no outcome row: it is run again
        version, left = 2 + 2 * at, list(reached[at:])
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
