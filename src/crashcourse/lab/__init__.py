"""The parent side of every experiment: what starts, kills, waits for and
judges the workers, never imported by them.

``harness`` (owned workers, boundaries, SIGKILL and SIGSTOP of a group),
``pipes`` (their output), ``experiment`` (a checkpoint's command line, trials
and evidence), ``evidence`` (artifacts never overwritten), ``waiting`` (the
one bounded ``wait_until``), ``hosts`` and ``two_hosts`` (network namespaces,
chapter 10), ``paused_stop`` (the operator's stop against a holder frozen
inside its write, chapters 09 and 10) and ``example`` (the running example's
data and stand-ins, which no runtime module below this one imports).
"""

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["example", "harness", "hosts", "paused_stop", "two_hosts"]
