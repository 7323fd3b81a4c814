"""WRONG ANSWER to exercise 08.2: the loser predicted refused ``illegal_move``
("the winner moved the workflow on, so its move no longer fits"). Legality
is judged on the pair the caller names, and that pair is in ``MOVES``; what
no longer fits is the version it read: ``stale_version``. Caught by every
paper test that compares the loser (``test_a_kill_before_the_first_call``).
"""

from crashcourse.workflow import ILLEGAL_MOVE


def loser():
    return {"exit_code": EXIT["refused"], "refused": ILLEGAL_MOVE,
            "transitions": []}
