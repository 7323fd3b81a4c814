"""Exercise 11.2: place the one fsync that matters (chapter 11).

Two kinds of file take part in a payment:

* ``RECORD``: the system of record, whose rows are the answer to "did this
  happen?" (the payment service's file);
* ``PROGRESS``: a worker's own note of how far it got (its checkpoint file),
  which a resume can rebuild by asking the system of record again under the
  same operation key.

An fsync per commit costs milliseconds on a real disk. Spend it where a
power cut would otherwise lose something nobody can ask for again, and
nowhere else.
"""

from __future__ import annotations

from crashcourse.powerloss import Mode

RECORD, PROGRESS = "system of record", "own progress"


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """For each file name in ``roles`` (its role: ``RECORD`` or
    ``PROGRESS``), the journal mode and ``synchronous`` level to open it in,
    as ``Mode(journal, synchronous)``, e.g. ``Mode("WAL", "NORMAL")``.

    Choose so that a power cut at any point of a pay-then-checkpoint run
    loses no acknowledged payment, corrupts no file and charges nothing
    twice once the worker resumes, with no fsync per commit that does not
    buy that.
    """
    raise NotImplementedError("exercise 11.2: which side needs the fsync?")
