"""A write lock's rule, made deterministic (issue 23; issue 36: no window).

When the code under test reaches the step that must run under the store's
write lock (a clock read, a stamp, a fence read), a spy lets a SECOND
connection try to take that lock WITHOUT WAITING
(``crashcourse.store.write_lock_free``): it is told "locked" at once while the caller
holds the lock there, as it must. Moved out of its transaction, the step
leaves the lock free and the second writer gets in, every run. The answer is
the lock's state at that instant, so no timing decides it: before issue 36 the
second writer waited up to its busy timeout and the spy looked for it for
1 s, so on a loaded machine a broken step whose lock was free could still
look "kept out" (the second writer not yet scheduled).
"""

from __future__ import annotations

from crashcourse.store import opened, write_lock_free


def second_writer_got_in(address, monkeypatch, target, name: str, call) -> bool:
    """Run ``call(conn)`` on the store at ``address``; the first time
    ``target.name`` returns inside it, another connection tries to take the
    write lock without waiting. Whether it got in."""
    real, seen = getattr(target, name), []

    def spy(*args, **kwargs):
        answer = real(*args, **kwargs)  # a server's BEGIN goes with this statement
        if not seen:
            seen.append(write_lock_free(address))
        return answer

    monkeypatch.setattr(target, name, spy)
    with opened(address) as conn:
        call(conn)
    assert seen, f"{name} was never called"
    return seen[0]
