"""Every grader bites: each exercise keeps its tempting wrong answers, and its
tests must reject every one of them.

A wrong answer lives at ``solutions/chNN/wrong/MODULE/LABEL.py`` and holds
ONLY the mistake: a docstring naming it (and the test that catches it), the
definitions that differ from the solution's, and any import they need. It is
graded as the solution with those definitions replaced: the graded module is
the solution's text followed by the wrong answer's, so each later definition
rebinds the name and the solution's other functions call the wrong one. Every
name a wrong answer defines must exist in the solution (a renamed function
would otherwise change nothing and pass for a mistake). The references are
written in small functions so that a mistake overrides one of them; a wrong
answer that changes what a solution's function gives, not how, wraps it:
``def judged(approval, action, policy, _reference=judged)`` binds the
solution's own ``judged`` (a default is evaluated as the ``def`` runs, before
the name is rebound). The exercise's tests
must then FAIL (exit 1: tests ran and at least one failed, not a crash of the
harness). An exercise without a recorded wrong answer is a grader nobody has
tried to fool.

The tests the wrong answer's docstring names (``test_...``) run first; only
if none of them fails does the whole file run: the same verdict (the file
fails), without the tests before the one that catches it.

The opposite defect is a grader that rejects a correct answer written another
way (09.1's trace once wanted the switch read by a statement beginning with
SELECT, and refused a CTE). A correct variant lives at
``solutions/chNN/right/MODULE/LABEL.py``, built the same way (only the
definitions that differ, a docstring saying what is different and why it is
still right), and the exercise's whole test file must PASS on it (exit 0).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"


def exercise_modules() -> list[tuple[str, str]]:
    """(chapter, module) for every stub a reader fills in."""
    return sorted(
        (stub.parent.name, stub.stem)
        for stub in EXERCISES.glob("ch[0-9][0-9]/*.py")
        if not stub.name.startswith(("test_", "conftest"))
    )


def wrong_answers() -> list[Path]:
    return sorted(SOLUTIONS.glob("ch[0-9][0-9]/wrong/*/*.py"))


def correct_variants() -> list[Path]:
    return sorted(SOLUTIONS.glob("ch[0-9][0-9]/right/*/*.py"))


def grading_tests_of(chapter: str, module: str) -> Path:
    return EXERCISES / chapter / f"test_{chapter}_{module}.py"


@pytest.mark.parametrize(("chapter", "module"), exercise_modules(),
                         ids=lambda v: v)
def test_every_exercise_records_a_wrong_answer(chapter, module):
    recorded = list((SOLUTIONS / chapter / "wrong" / module).glob("*.py"))
    assert recorded, f"record a tempting wrong answer for {chapter}/{module}"
    assert grading_tests_of(chapter, module).is_file()


def defined_names(source: str) -> set[str]:
    """The top-level names a module's text defines (functions, classes,
    assignments)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def graded_module(wrong: Path, solution: Path) -> str:
    """The solution with the wrong answer's definitions replacing its own."""
    mistake = "\n".join(line for line in wrong.read_text().splitlines()
                        if line.strip() != "from __future__ import annotations")
    return f"{solution.read_text()}\n\n# --- {wrong.name}: the mistake ---\n{mistake}\n"


@pytest.mark.parametrize("wrong", wrong_answers() + correct_variants(),
                         ids=lambda p: f"{p.parts[-4]}/{p.parent.name}/{p.stem}")
def test_a_wrong_answer_only_redefines_what_the_solution_defines(wrong):
    solution = SOLUTIONS / wrong.parts[-4] / f"{wrong.parent.name}.py"
    assert solution.is_file(), "no such exercise"
    stray = defined_names(wrong.read_text()) - defined_names(solution.read_text())
    assert stray == set(), f"{wrong.name} defines names the solution lacks: {stray}"
    assert defined_names(wrong.read_text()), f"{wrong.name} changes nothing"


# Issue 30: the recorded wrong answers hold the mistake alone, not a copy of
# the solution around it. Copies made them 2,045 lines; split into small
# functions, the references let each override one, and the total stays under
# this (it was 1,925 when set): a wrong answer that grows past it is copying.
WRONG_ANSWER_LINES = 2_000


def test_the_wrong_answers_hold_only_their_mistakes():
    total = sum(len(w.read_text().splitlines()) for w in wrong_answers())
    assert total < WRONG_ANSWER_LINES, (
        f"the recorded wrong answers take {total} lines, over"
        f" {WRONG_ANSWER_LINES}: one is copying the solution around its"
        " mistake; split the reference's function so the mistake overrides one")


def named_tests(wrong: Path) -> list[str]:
    """The grading tests a wrong answer's docstring says catch it (``test_...``,
    a parametrized one as a whole)."""
    doc = ast.get_docstring(ast.parse(wrong.read_text())) or ""
    return list(dict.fromkeys(re.findall(r"``(test_\w+)", doc)))


# What a grading run needs of pytest: not the notebook plugin, nor langsmith's
# (LangGraph's dependency), which cost a second of imports per run.
GRADING_FLAGS = ("-q", "-x", "-p", "no:cacheprovider", "-p", "no:nbval",
                 "-p", "no:langsmith_plugin", "--tb=line", "-rN")


@pytest.mark.parametrize("wrong", wrong_answers(),
                         ids=lambda p: f"{p.parts[-4]}/{p.parent.name}/{p.stem}")
def test_the_tests_reject_the_wrong_answer(wrong, tmp_path, request,
                                           measured_once_folder):
    chapter, module = wrong.parts[-4], wrong.parent.name
    # what the graders measure whatever the answer (chapter 12's real kills) is
    # measured once per session, here or in the solutions' run, and reused
    server = {"CRASHCOURSE_MEASURED_ONCE": str(measured_once_folder)}
    if chapter == "ch10":  # one PostgreSQL for every wrong answer, not one each
        from crashcourse.store.postgres_server import URL_ENV

        server[URL_ENV] = request.getfixturevalue("pg_server").url
    assert (SOLUTIONS / chapter / f"{module}.py").is_file(), "no such exercise"
    tree = tmp_path / "answers"
    shutil.copytree(SOLUTIONS / chapter, tree / chapter,
                    ignore=shutil.ignore_patterns("wrong", "right", "__pycache__",
                                                  "*.md"))
    (tree / chapter / f"{module}.py").write_text(
        graded_module(wrong, SOLUTIONS / chapter / f"{module}.py"))
    tests = grading_tests_of(chapter, module)

    def grade(*selected: str) -> subprocess.CompletedProcess:
        # -x: one failing test rejects the answer; the rest need not run
        return subprocess.run(
            [sys.executable, "-m", "pytest", *GRADING_FLAGS, *selected],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
            env={**os.environ, "CRASHCOURSE_ANSWERS": str(tree), **server})

    # The tests the docstring names run first: if one fails, the whole file
    # fails (the verdict), without running the tests before it. If they all
    # pass (or name nothing), the whole file is the judge, as always.
    named = [f"{tests}::{name}" for name in named_tests(wrong)]
    graded = grade(*named) if named else None
    if graded is None or graded.returncode != 1:
        graded = grade(str(tests))
    assert graded.returncode == 1, (
        f"{wrong.name} was not rejected (exit {graded.returncode}):\n"
        + graded.stdout[-2000:] + graded.stderr[-2000:])
    assert " failed" in graded.stdout


@pytest.mark.parametrize("wrong", wrong_answers(),
                         ids=lambda p: f"{p.parts[-4]}/{p.parent.name}/{p.stem}")
def test_every_wrong_answer_is_explained_in_its_chapter(wrong):
    """A recorded mistake the chapter's EXPLANATION.md never names is a trap
    the reader meets without the reason: each label appears there as
    ``LABEL.py``."""
    explanation = SOLUTIONS / wrong.parts[-4] / "EXPLANATION.md"
    assert explanation.is_file(), f"{wrong.parts[-4]} has no EXPLANATION.md"
    assert f"{wrong.name}`" in explanation.read_text(), (
        f"{explanation.relative_to(ROOT)} never names `{wrong.name}`: "
        "say what the mistake is and which test catches it")


def test_the_correct_variants_are_found():
    """Each kind a grader could wrongly refuse has its recorded variant: a
    CTE (09.1), SQL spelled unlike the reference's (02.2, 03.2, 04.2, 05.2,
    08.1, 10.1), statements through a cursor and ``executemany`` (01.2,
    where the rival is traced), the server's clock read another way (10.1,
    10.3), the lock taken another way (01.2's and 05.2's first write, 06.2's
    fence unwrapped, 10.3's ``FOR UPDATE`` by hand), state kept in the store
    rather than the process (06.1's generation read back, 09.1's trigger-kept
    current state), and answers that look like gaming but are
    right (04.1's table of answers, 05.1's digest label, 12.1's own hash)."""
    found = {f"{p.parts[-4]}/{p.parent.name}" for p in correct_variants()}
    wanted = {"ch01/place_order", "ch02/grader", "ch03/terms", "ch04/capacity",
              "ch04/predict", "ch05/reuse_owner", "ch05/session_budget",
              "ch06/cancel_delayed", "ch06/unfenced_quote", "ch07/reorder",
              "ch08/transition", "ch09/may_run", "ch10/fenced_finish",
              "ch10/lease_clock", "ch11/breaking_point", "ch12/action_key"}
    assert wanted <= found, (
        f"a correct variant is missing: {sorted(wanted - found)}")


@pytest.mark.parametrize("right", correct_variants(),
                         ids=lambda p: f"{p.parts[-4]}/{p.parent.name}/{p.stem}")
def test_the_tests_accept_a_correct_variant(right, tmp_path, request,
                                            measured_once_folder):
    """A grader that rejects a correct answer is a defect too: the whole test
    file passes on the variant."""
    chapter, module = right.parts[-4], right.parent.name
    server = {"CRASHCOURSE_MEASURED_ONCE": str(measured_once_folder)}
    if chapter == "ch10":
        from crashcourse.store.postgres_server import URL_ENV

        server[URL_ENV] = request.getfixturevalue("pg_server").url
    tree = tmp_path / "answers"
    shutil.copytree(SOLUTIONS / chapter, tree / chapter,
                    ignore=shutil.ignore_patterns("wrong", "right", "__pycache__",
                                                  "*.md"))
    (tree / chapter / f"{module}.py").write_text(
        graded_module(right, SOLUTIONS / chapter / f"{module}.py"))
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", *GRADING_FLAGS,
         str(grading_tests_of(chapter, module))],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CRASHCOURSE_ANSWERS": str(tree), **server})
    assert graded.returncode == 0, (
        f"the correct variant {right.name} was rejected (exit"
        f" {graded.returncode}): the grader holds an answer to one spelling;\n"
        + graded.stdout[-2000:] + graded.stderr[-2000:])
