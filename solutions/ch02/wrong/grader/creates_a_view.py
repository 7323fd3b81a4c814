"""WRONG ANSWER to exercise 02.2 (chapter 02): the query kept as a view in the
service's file.

The mistake: the answer is right, but it creates a ``VIEW`` in the payment
service's file to read it from (``CREATE VIEW IF NOT EXISTS``, so a second
run works too). It changes no row of ``payments`` or ``approvals``, yet the
system of record now holds a schema object the service never made: the next
``install`` or migration meets a name it did not expect, and a grader was
told to read only. Caught by ``test_grading_writes_nothing`` (and every other
test): each call is checked to leave the whole file, schema included, as it
was.
"""


def overcharged_rows(conn):
    conn.execute("CREATE VIEW IF NOT EXISTS overcharged AS"
                 + OVERCHARGED.replace(":nothing", "0"))
    return conn.execute("SELECT * FROM overcharged").fetchall()
