"""Exercise 11.2: the journal with a blind spot (chapter 11).

A file's ``synchronous`` level follows its role. The chapter settled three:

* ``RECORD``: the system of record, whose rows answer "did this happen?"
  (the payment service's file);
* ``PROGRESS``: a worker's own note of how far it got (its checkpoint file),
  rebuilt by asking the system of record again under the same operation key;
* ``JOURNAL``: chapter 07's journal, when every step's probe can see at its
  target whether the step was done.

One it did not: ``BLIND_JOURNAL``, the same journal with one step whose
probe cannot see it (a mail provider nobody can ask: its probe always says
"not sent").

An fsync per commit costs milliseconds on a real disk. Spend it where a
power cut would otherwise make the resumed run repeat an action with no
trace that it might already have happened, and nowhere else.
"""

from __future__ import annotations

from crashcourse.powerloss import Mode

RECORD, PROGRESS = "system of record", "own progress"
JOURNAL, BLIND_JOURNAL = "journal, every probe sees", "journal, one probe blind"


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """For each file name in ``roles`` (its role: one of the four above), the
    journal mode and ``synchronous`` level to open it in, as
    ``Mode(journal, synchronous)``, e.g. ``Mode("WAL", "NORMAL")``.

    Choose so that a power cut at any point, once the work is resumed, loses
    no acknowledged payment, corrupts no file and charges nothing twice; no
    step of a journal runs again unless the journal, as the cut left it,
    held that step in doubt; and no fsync per commit is paid that buys
    neither.
    """
    raise NotImplementedError("exercise 11.2: which files need the fsync?")
