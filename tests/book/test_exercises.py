"""A reader's solved exercises never turn the repository red.

The stub check grades the stubs as committed, so a reader who pastes the
reference answers into ``exercises/`` (or solves them in place) still gets a
green grade-both run, while ``make exercise`` grades what they wrote.

These tests run in the reader's own checkout, whose ``exercises/`` may hold
their answers: the small checkout they build takes ``exercises/`` and
``solutions/`` from git (``HEAD``), as shipped, never from the working tree.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "ch01"


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                   timeout=60)


def grade(folder: Path, *flags: str, env_answers: str | None = None):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder)}
    if env_answers:
        env["CRASHCOURSE_ANSWERS"] = env_answers
    # without the notebook plugin and langsmith's (LangGraph's dependency):
    # a second of imports per run that grading never uses
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:nbval", "-p", "no:langsmith_plugin", f"exercises/{CHAPTER}",
         *flags],
        cwd=folder, capture_output=True, text=True, timeout=300, env=env)


def shipped(folder: Path) -> None:
    """``exercises/`` and ``solutions/`` as committed at HEAD, into ``folder``:
    what the book shipped, whatever the reader has done to the working tree."""
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD",
                              "exercises", "solutions"], cwd=ROOT,
                             capture_output=True, timeout=60)
    if archive.returncode != 0:  # not a git checkout: the files are the stubs
        for part in ("exercises", "solutions"):
            shutil.copytree(ROOT / part, folder / part,
                            ignore=shutil.ignore_patterns("__pycache__"))
        return
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")


def reader_copy(tmp_path: Path) -> Path:
    """A small checkout: the exercises and solutions, committed as shipped."""
    folder = tmp_path / "book"
    folder.mkdir()
    shipped(folder)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=reader", "-c", "user.email=r@example.invalid",
        "commit", "-q", "-m", "as shipped")
    return folder


def test_pasting_the_answers_keeps_grade_both_green(tmp_path):
    folder = reader_copy(tmp_path)
    for solved in (folder / "solutions" / CHAPTER).glob("*.py"):
        shutil.copy(solved, folder / "exercises" / CHAPTER / solved.name)
    both = grade(folder, "--grade-both")
    assert both.returncode == 0, both.stdout[-3000:]
    assert "xfailed" in both.stdout and "XPASS" not in both.stdout
    mine = grade(folder, "--exercise-summary")  # the reader's own grade: solved
    assert mine.returncode == 0, mine.stdout[-3000:]
    assert "(solved)" in mine.stdout and "(not yet)" not in mine.stdout


def make_exercise_flags(detail: bool = False) -> list[str]:
    """The pytest flags of ``make exercise`` (``DETAIL=1``: ``detail``), read
    from the Makefile's GRADE_FLAGS, so these tests grade as a reader does."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    flags = re.search(r"^GRADE_FLAGS = (.*)$", text, re.M).group(1)
    flags = re.sub(r"\$\(if \$\(DETAIL\),([^,]*),([^)]*)\)",
                   lambda m: m.group(1 if detail else 2), flags)
    assert "$" not in flags, flags
    return flags.split()


def failing_count(output: str) -> int:
    """How many tests fail, from the grade's lines per exercise."""
    return sum(int(total) - int(passed) for passed, total in re.findall(
        r"^ch\d\d_\w+: (\d+) of (\d+) tests pass", output, re.M))


def one_line_per_failure(output: str) -> list[str]:
    """The lines under the grade's "your exercises" heading that name a
    failing test: two spaces, FAILED, the test in words, a colon, why."""
    below = output.split(" your exercises ", 1)[1]
    return [line for line in below.splitlines() if line.startswith("  FAILED ")]


def test_the_untouched_stubs_grade_as_not_yet(tmp_path):
    folder = reader_copy(tmp_path)
    mine = grade(folder, *make_exercise_flags())
    assert mine.returncode == 1
    assert "(not yet)" in mine.stdout and "(solved)" not in mine.stdout
    failed = failing_count(mine.stdout)
    reasons = one_line_per_failure(mine.stdout)
    assert len(reasons) == failed > 0  # one line each, and nothing else about them
    assert all("not written yet (exercise 01." in line for line in reasons), reasons
    assert "Traceback" not in mine.stdout and "Falsifying" not in mine.stdout
    assert len(mine.stdout.splitlines()) < failed + 15, mine.stdout


def test_a_wrong_answer_gets_one_line_per_failing_test_and_detail_on_request(
        tmp_path):
    """A recorded wrong answer in the reader's copy: each failing test is one
    line with its name in words and the grader's words; ``DETAIL=1`` adds
    pytest's own report above the same lines."""
    folder = reader_copy(tmp_path)
    mine = folder / "exercises" / CHAPTER / "apply_checked.py"
    wrong = folder / "solutions" / CHAPTER / "wrong" / "apply_checked"
    mistake = (wrong / "refusal_forgotten.py").read_text().replace(
        "from __future__ import annotations", "")
    solution = (folder / "solutions" / CHAPTER / mine.name).read_text()
    mine.write_text(f"{solution}\n\n{mistake}\n")  # as test_wrong_answers grades it
    brief = grade(folder, *make_exercise_flags(), f"exercises/{CHAPTER}/test_{CHAPTER}"
                  "_apply_checked.py")
    assert brief.returncode == 1
    reasons = one_line_per_failure(brief.stdout)
    failed = failing_count(brief.stdout)
    assert len(reasons) == failed >= 1
    assert any(line.startswith("  FAILED a refusal is kept and a replay hears it: ")
               for line in reasons), reasons
    assert all(re.search(r"\w: .+ \(\w+\.py:\d+\)$", line) for line in reasons), reasons
    assert "Traceback" not in brief.stdout and "def test_" not in brief.stdout
    detail = grade(folder, *make_exercise_flags(detail=True),
                   f"exercises/{CHAPTER}/test_{CHAPTER}_apply_checked.py")
    assert one_line_per_failure(detail.stdout) == reasons
    above = detail.stdout.split(" your exercises ", 1)[0]
    assert "= FAILURES =" in above and "test_ch01_apply_checked.py:" in above
