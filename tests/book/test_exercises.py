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


def test_the_untouched_stubs_grade_as_not_yet(tmp_path):
    folder = reader_copy(tmp_path)
    mine = grade(folder, "--tb=line", "-rN", "--exercise-summary")
    assert mine.returncode == 1
    assert "(not yet)" in mine.stdout and "(solved)" not in mine.stdout
    assert len(mine.stdout.splitlines()) < 120  # short: no docstring per failure
