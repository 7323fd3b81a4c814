"""A correct answer that keeps the switch's current state in a different
durable place: a ``job_current`` table the DATABASE keeps, by a trigger on
every decision inserted into ``job_switch`` (by this code or any other
writer), and the newest decision read from it. Nothing is kept in the
process; a decision written from another connection moves it in the same
transaction as its insert."""

def install(conn: sqlite3.Connection) -> None:
    ensure_schema(conn, SCHEMA)
    with immediate(conn):  # one statement each: a trigger's body holds ";"
        conn.execute("CREATE TABLE IF NOT EXISTS job_current ("
                     " job TEXT PRIMARY KEY,"
                     " seq INTEGER NOT NULL REFERENCES job_switch (seq),"
                     " state TEXT NOT NULL)")
        conn.execute("CREATE TRIGGER IF NOT EXISTS job_switch_moves_current"
                     " AFTER INSERT ON job_switch BEGIN"
                     " INSERT OR REPLACE INTO job_current (job, seq, state)"
                     " VALUES (NEW.job, NEW.seq, NEW.state); END")


def _newest(conn: sqlite3.Connection, job: str):
    return conn.execute("SELECT seq, state FROM job_current WHERE job = :job",
                        {"job": job}).fetchone()
