"""Exercise 10.1: the fence in one statement (chapter 10).

``fence.finish`` guards its write the way chapter 06 taught: inside one
transaction it reads the work row (locked, on a server), judges the claim in
Python, and only then writes. There is a shorter way to say the same thing
to a database: make the check the write's own ``WHERE`` clause. The row
changes only if it still says that this claim holds the work, judged by the
database at the instant it applies the change, and nothing can happen
between the check and the write, because there is no "between".

Write ``finish`` that way, for a store on a PostgreSQL server (``conn`` is a
``crashcourse.store.postgres`` connection: ``conn.execute(sql, {named})`` and the
cursor's ``rowcount``, as on sqlite3).
"""

from __future__ import annotations

from crashcourse.claims import DONE, RUNNING, Claim  # noqa: F401  (the statuses)

# The database's clock as seconds since the epoch, read when the statement
# runs: the same clock every lease in the store was written with.
SERVER_NOW = "extract(epoch FROM clock_timestamp())"


def finish(conn, claim: Claim, outcome: str) -> bool:
    """Set ``claim``'s work DONE with ``outcome`` (and ``expires`` NULL,
    ``finished`` the database's now), if ``claim`` is still the live claim:
    the same work id, generation and owner on the row, the row RUNNING, and
    its lease not over by the DATABASE's clock. Return True if the row was
    written, False if it was refused (the row untouched).

    ONE ``UPDATE`` statement and nothing else: no read before it, no
    transaction of your own. Refusals are not recorded anywhere.
    """
    raise NotImplementedError("exercise 10.1: put the fence in the WHERE clause")
