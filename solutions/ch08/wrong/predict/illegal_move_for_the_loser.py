"""WRONG ANSWER to exercise 08.2 (chapter 08): the loser's move is illegal.

The mistake: the loser is predicted to be refused with ``illegal_move``. The
reasoning sounds right: by the time the loser writes, the winner has moved
the workflow on (pending is running now, the step in doubt is settled), so
the loser's move no longer fits. But legality is judged on the move the
caller names, from the state it read, and that pair is in ``MOVES``; what no
longer fits is the version it read. The loser is refused ``stale_version``:
it was overtaken, it asked nothing illegal. Caught by every paper test that
compares the loser, and by every real race.
"""


from crashcourse.workflow import APPLIED, ILLEGAL_MOVE, PENDING, RUNNING, WAITING


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
        happened = where == "after_remote" and (approved or step != "charge")
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
        "loser": {"exit_code": EXIT["refused"], "refused": ILLEGAL_MOVE,
                  "transitions": []},
        "final_state": APPLIED if approved else WAITING,
        # unapproved, only the reservation happened: a refused charge is no
        # payment, and the mail is never reached
        "service_ops": {keys[step]: int(approved or step == "reserve")
                        for step in STEPS},
    }
