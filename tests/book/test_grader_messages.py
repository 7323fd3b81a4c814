"""Every grader's failing assertion says the mistake in a sentence (issue 32).

``make exercise`` prints one line per failing test: the test's name in words
and the assertion's message (exercises/conftest.py why_it_failed). A bare
``assert [True, True] == [False, True]`` gives the reader only what was
compared; a message says what the answer did wrong, then the detail. This
check reads every grader (exercises/chNN/test_*.py) and finds each ``assert``
without a message.

PENDING holds the graders not yet converted (none now), with how many bare asserts each
still has: a count may only go down (and a file leaves the list at 0); a
grader not listed must have none, so the class stays fixed where it is fixed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRADERS = sorted((ROOT / "exercises").glob("ch[0-9][0-9]/test_*.py"))

PENDING: dict[str, int] = {}


def bare_asserts(source: str) -> list[int]:
    """The line of each ``assert`` in ``source`` that carries no message."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Assert) and node.msg is None]


def test_the_graders_are_found():
    assert len(GRADERS) >= 30, f"only {len(GRADERS)} graders under exercises/"


def test_every_assert_in_a_grader_says_what_went_wrong():
    found = {p.relative_to(ROOT / "exercises").as_posix(): bare_asserts(p.read_text())
             for p in GRADERS}
    unexpected = {name: lines for name, lines in found.items()
                  if len(lines) > PENDING.get(name, 0)}
    assert unexpected == {}, (
        "these graders have asserts without a message (file: lines); give each"
        " a sentence of what the answer did wrong, then the detail:"
        f" {unexpected}")
    done = sorted(name for name, count in PENDING.items()
                  if len(found.get(name, [])) < count)
    assert done == [], (
        f"fewer bare asserts than PENDING says in {done}: lower their counts"
        " (or remove them at 0), so the class cannot come back")


def test_the_check_sees_a_bare_assert():
    """Its negative control: a bare assert is found, one with a message not."""
    assert bare_asserts("def test_x():\n    assert 1 == 2\n") == [2], (
        "a bare assert was not found")
    assert bare_asserts("def test_x():\n    assert 1 == 2, 'one is not two'\n"
                        ) == [], "an assert with a message was counted as bare"
