"""Exercise 07.4: from a delta to an end state (chapter 07)."""

from __future__ import annotations

from pathlib import Path

from crashcourse.journal.plan import Step  # noqa: F401  (return one)
from crashcourse.services import drive  # noqa: F401  (drive.lookup, by path)


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    """A ``rename`` Step that adds ``suffix`` before the extension, stated as
    the end state: ``{"file_id": ..., "name": <the full new name>}``.

    ``drive_path`` is the drive's address (the path of its file).
    ``scan-001.pdf`` with ``-signed`` becomes ``scan-001-signed.pdf``: the
    suffix goes before the last dot, or at the end of a name without one.
    The name is computed from the file's name as it is now, while planning,
    whatever it is: ``scan-004-signed.pdf`` becomes
    ``scan-004-signed-signed.pdf``, since the plan asks for one more suffix.
    Safety on a re-run comes from stating the end state, not from guessing
    whether the suffix is already there. Planning renames nothing.
    """
    raise NotImplementedError("exercise 07.4: compute the name once")
