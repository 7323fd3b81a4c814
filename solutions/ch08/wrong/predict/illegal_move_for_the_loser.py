"""The loser predicted refused ``illegal_move`` ("the winner moved the workflow on, so
its move no longer fits"). Caught by ``test_a_kill_before_the_first_call``."""

from crashcourse.workflow import ILLEGAL_MOVE


def loser():
    return {"exit_code": EXIT["refused"], "refused": ILLEGAL_MOVE,
            "transitions": []}
