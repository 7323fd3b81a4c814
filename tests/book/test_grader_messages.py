"""Every grader's failing assertion says the mistake in a sentence (issue 32).

``make exercise`` prints one line per failing test: the test's name in words
and the assertion's message (exercises/conftest.py why_it_failed). A bare
``assert [True, True] == [False, True]`` gives the reader only what was
compared; a message says what the answer did wrong, then the detail. This
check reads every grader (exercises/chNN/test_*.py) and finds each ``assert``
without a message.

The same holds for ``with pytest.raises(...)``: an answer that does not raise
gets pytest's "DID NOT RAISE <class>", which names the exception, not the
mistake. Each such block ends with ``pytest.fail("...")``, the sentence of what
an answer that returned instead did wrong (reached only when nothing was
raised; ``Failed`` is no ``Exception``, so even ``pytest.raises(Exception)``
lets it through).

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


def is_call_to(node: ast.AST, name: str) -> bool:
    """``node`` calls ``pytest.<name>`` (or ``<name>`` imported from pytest)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return ((isinstance(func, ast.Attribute) and func.attr == name
             and isinstance(func.value, ast.Name) and func.value.id == "pytest")
            or (isinstance(func, ast.Name) and func.id == name))


def says_why(statement: ast.stmt) -> bool:
    """``statement`` is ``pytest.fail(<a message>)``."""
    return (isinstance(statement, ast.Expr) and is_call_to(statement.value, "fail")
            and bool(statement.value.args or any(
                k.arg == "reason" for k in statement.value.keywords)))


def silent_raises(source: str) -> list[int]:
    """The line of each ``pytest.raises`` in ``source`` whose failure would say
    only "DID NOT RAISE": a ``with`` block not ending in ``pytest.fail(...)``,
    or the call form ``pytest.raises(Error, function, ...)``, which can carry
    no sentence at all."""
    tree = ast.parse(source)
    in_a_with = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                in_a_with[id(item.context_expr)] = node
    silent = []
    for node in ast.walk(tree):
        if not is_call_to(node, "raises"):
            continue
        block = in_a_with.get(id(node))
        if block is None or not says_why(block.body[-1]):
            silent.append(node.lineno)
    return sorted(silent)


def skips(source: str) -> list[int]:
    """The line of each way a grader can skip instead of fail: ``pytest.skip``,
    ``pytest.importorskip``, a ``skip``/``skipif`` mark. A skipped grader
    reports an unsolved stub as "skipped", exit 0 (chapter 10's once did,
    without PostgreSQL)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if is_call_to(node, "skip") or is_call_to(node, "importorskip"):
            found.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr in ("skip", "skipif")
              and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"):
            found.append(node.lineno)
    return sorted(found)


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


def test_every_pytest_raises_in_a_grader_says_what_went_wrong():
    found = {p.relative_to(ROOT / "exercises").as_posix(): silent_raises(p.read_text())
             for p in GRADERS}
    silent = {name: lines for name, lines in found.items() if lines}
    assert silent == {}, (
        "these graders expect an error and, when the answer raises none, say"
        " only DID NOT RAISE (file: lines): end each `with pytest.raises(...)`"
        " block with pytest.fail(...) saying what an answer that returned did"
        f" wrong: {silent}")


def test_the_check_sees_a_silent_raises():
    """Its negative control: each form of a raises without a sentence is found,
    one that ends in a sentence not."""
    def found(body: str) -> list[int]:
        return silent_raises("import pytest\nfrom pytest import raises\n"
                             "def test_x(mod):\n" + body)

    assert found("    with pytest.raises(ValueError):\n        mod.f()\n") == [4], (
        "a bare with pytest.raises was not found")
    assert found("    with open('f') as f, pytest.raises(KeyError) as e:\n"
                 "        mod.f(f)\n") == [4], (
        "a pytest.raises beside another context manager was not found")
    assert found("    with raises(ValueError):\n        mod.f()\n") == [4], (
        "a raises imported from pytest was not found")
    assert found("    with pytest.raises(ValueError):\n        pytest.fail('x')\n"
                 "        mod.f()\n") == [4], (
        "a block whose pytest.fail comes before the call was taken for one"
        " that says why")
    assert found("    with pytest.raises(ValueError):\n        mod.f()\n"
                 "        pytest.fail()\n") == [4], (
        "a block ending in pytest.fail() without a sentence was taken for one"
        " that says why")
    assert found("    pytest.raises(ValueError, mod.f, 1)\n") == [4], (
        "the call form of pytest.raises, which carries no sentence, was not found")
    assert found("    with pytest.raises(ValueError):\n        got = mod.f()\n"
                 "        pytest.fail(f'the bad input was accepted: {got}')\n"
                 ) == [], "a block ending in pytest.fail('...') was counted as silent"


def test_no_grader_skips():
    graders = sorted((ROOT / "exercises").glob("**/*.py"))  # conftest files too
    found = {p.relative_to(ROOT / "exercises").as_posix(): skips(p.read_text())
             for p in graders}
    skipping = {name: lines for name, lines in found.items() if lines}
    assert skipping == {}, (
        "these graders skip (file: lines), and a skipped grader passes an"
        " unsolved stub: fail with pytest.fail(..., pytrace=False) saying what"
        f" is missing and how to get it: {skipping}")


def test_the_check_sees_a_skip():
    """Its negative control: each way of skipping is found."""
    assert skips("import pytest\npytest.importorskip('dbos')\n") == [2], (
        "a module-level importorskip was not found")
    assert skips("import pytest\ndef test_x():\n    pytest.skip('no server')\n"
                 ) == [3], "a pytest.skip was not found"
    assert skips("import pytest\n@pytest.mark.skipif(True, reason='r')\n"
                 "def test_x():\n    pass\n") == [2], "a skipif mark was not found"
    assert skips("import pytest\ndef test_x():\n    pytest.fail('x')\n") == [], (
        "a pytest.fail was counted as a skip")
