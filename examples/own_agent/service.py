"""The mail provider of this small project: a table of messages. It takes no
key, and it can be searched by the key a message carries."""

import sqlite3

DB = "provider.sqlite"


def connect():
    conn = sqlite3.connect(DB, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS sent (key TEXT, body TEXT)")
    return conn


def send(body, key):
    with connect() as conn:
        conn.execute("INSERT INTO sent VALUES (?, ?)", (key, body))


def found(key):
    with connect() as conn:
        return conn.execute("SELECT count(*) FROM sent WHERE key = ?",
                            (key,)).fetchone()[0] > 0


def count():
    """What the kill test reads: effect name -> how many the provider holds."""
    with connect() as conn:
        return {"mail": conn.execute("SELECT count(*) FROM sent").fetchone()[0]}
