"""The query kept as a view in the service's file. Caught by
``test_grading_writes_nothing``."""


def overcharged_rows(conn):
    conn.execute("CREATE VIEW IF NOT EXISTS overcharged AS"
                 + overcharged_sql().replace(":nothing", "0"))
    return conn.execute("SELECT * FROM overcharged").fetchall()
