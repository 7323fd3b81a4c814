"""Chapter 09 (issue 20): what the review asked of every chapter, kept.

The rules ``tests/test_book.py`` holds chapters 00-03 to (an answer to unfold
under every recall question, no check of -9 after a kill or of a
checkpoint's held count, under 4,000 words of prose), plus chapter 09's own:
its count of effects is taken against COMMIT stamps, never the instant a
credential was judged, and its draft check is named as a draft and stays in
the chapter.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
[CHAPTER] = sorted((ROOT / "book").glob("09_*.md"))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def code() -> str:
    return "\n".join(FENCE.findall(CHAPTER.read_text()))


def test_every_recall_question_has_an_answer_to_unfold():
    recall = CHAPTER.read_text().split("## Active recall", 1)[1].split("\n## ", 1)[0]
    questions = re.findall(r"^\*\*\d+\. .+", recall, re.M)
    answers = recall.count(":::{admonition} Answer\n:class: dropdown\n")
    assert len(questions) >= 3 and answers == len(questions)


def test_no_check_restates_a_kill_or_a_verdict():
    assert not re.findall(r"check\([^()]*(?:\([^()]*\)[^()]*)*,\s*-9\)", code())
    assert not re.search(r"\[\"held\"\]", code())


def test_prose_stays_under_four_thousand_words():
    text = CHAPTER.read_text().split("\n---\n", 1)[-1]
    assert len(FENCE.sub("", text).split()) <= 4000


def test_effects_are_counted_by_their_commit_stamps():
    """``verified_at`` is when the broker judged a credential: a count against
    it cannot see a write judged before a revocation and committed after."""
    assert "verified_at" not in code()
    assert "committed_at" in code() and "accepted_at" in code()


def test_the_draft_is_named_as_one_and_not_exported():
    assert "def rename_checked_naive(" in code()
    runtime = (ROOT / "src" / "crashcourse").rglob("*.py")
    assert not any("rename_checked_naive" in path.read_text() for path in runtime)
