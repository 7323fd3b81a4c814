"""Every grader bites: each exercise keeps its tempting wrong answers, and its
tests must reject every one of them.

A wrong answer lives at ``solutions/chNN/wrong/MODULE/LABEL.py``: a complete,
plausible module with one mistake, named in its docstring and in the
exercise's EXPLANATION.md. It is graded like a reader's copy: the solutions
folder with that one module swapped for the wrong one, and the exercise's
tests must FAIL (exit 1: tests ran and at least one failed, not a crash of
the harness). An exercise without a recorded wrong answer is a grader nobody
has tried to fool.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def grading_tests_of(chapter: str, module: str) -> Path:
    return EXERCISES / chapter / f"test_{chapter}_{module}.py"


@pytest.mark.parametrize(("chapter", "module"), exercise_modules(),
                         ids=lambda v: v)
def test_every_exercise_records_a_wrong_answer(chapter, module):
    recorded = list((SOLUTIONS / chapter / "wrong" / module).glob("*.py"))
    assert recorded, f"record a tempting wrong answer for {chapter}/{module}"
    assert grading_tests_of(chapter, module).is_file()


@pytest.mark.parametrize("wrong", wrong_answers(),
                         ids=lambda p: f"{p.parts[-4]}/{p.parent.name}/{p.stem}")
def test_the_tests_reject_the_wrong_answer(wrong, tmp_path, request):
    chapter, module = wrong.parts[-4], wrong.parent.name
    server = {}
    if chapter == "ch10":  # one PostgreSQL for every wrong answer, not one each
        from crashcourse.postgres import URL_ENV

        server = {URL_ENV: request.getfixturevalue("pg_server").url}
    assert (SOLUTIONS / chapter / f"{module}.py").is_file(), "no such exercise"
    tree = tmp_path / "answers"
    shutil.copytree(SOLUTIONS / chapter, tree / chapter,
                    ignore=shutil.ignore_patterns("wrong", "__pycache__", "*.md"))
    shutil.copy(wrong, tree / chapter / f"{module}.py")
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--tb=line", "-rN", str(grading_tests_of(chapter, module))],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CRASHCOURSE_ANSWERS": str(tree), **server},
    )
    assert graded.returncode == 1, (
        f"{wrong.name} was not rejected (exit {graded.returncode}):\n"
        + graded.stdout[-2000:] + graded.stderr[-2000:])
    assert " failed" in graded.stdout
