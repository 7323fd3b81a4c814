"""A correct answer that reads the server's clock another way: the lease's
end computed by the database in one expression (its clock plus the ttl),
not ``store.now`` plus the ttl in Python. Still read after the row is
locked, still the clock every host compares with."""


def lease_end(conn, ttl: float) -> float:
    return conn.execute(
        "SELECT date_part('epoch', clock_timestamp()) + :ttl",
        {"ttl": ttl}).fetchone()[0]
