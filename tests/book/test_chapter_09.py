"""Chapter 09 (issue 20): what the review asked of every chapter, kept.

Chapter 09's own rules, beside those ``tests/book/test_chapters.py`` holds every
chapter to: its count of effects is taken against COMMIT stamps, never the
instant a credential was judged, and its draft check is named as a draft and
stays in the chapter.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
[CHAPTER] = sorted((ROOT / "book").glob("09_*.md"))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def code() -> str:
    return "\n".join(FENCE.findall(CHAPTER.read_text()))


def test_effects_are_counted_by_their_commit_stamps():
    """``verified_at`` is when the broker judged a credential: a count against
    it cannot see a write judged before a revocation and committed after."""
    assert "verified_at" not in code()
    assert "committed_at" in code() and "accepted_at" in code()


def test_the_draft_is_named_as_one_and_not_exported():
    assert "def rename_checked_naive(" in code()
    runtime = (ROOT / "src" / "crashcourse").rglob("*.py")
    assert not any("rename_checked_naive" in path.read_text() for path in runtime)
