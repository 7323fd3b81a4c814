"""Exercise 11.2, answered: the journal with a blind spot (chapter 11)."""

from __future__ import annotations

from crashcourse.powerloss import Mode

RECORD, PROGRESS = "system of record", "own progress"
JOURNAL, BLIND_JOURNAL = "journal, every probe sees", "journal, one probe blind"


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """The system of record syncs its WAL at every commit (WAL+FULL). So does
    a journal with a blind step: its intent, once committed, must survive, or
    a mail already sent leaves no trace and the resume sends it again with
    nothing in doubt. FULL does not stop a repeat of the step that WAS in
    doubt (its blind probe still says "not sent"); it keeps that doubt
    visible, which is all a resume, or a person, can act on. A worker's
    progress and a journal whose probes all see stay in WAL+NORMAL: what a
    cut takes from them is asked of the target again."""
    durable, cheap = Mode("WAL", "FULL"), Mode("WAL", "NORMAL")
    return {name: durable if role in (RECORD, BLIND_JOURNAL) else cheap
            for name, role in roles.items()}
