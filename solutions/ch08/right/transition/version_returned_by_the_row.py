"""A correct answer in other SQL: the compare-and-set hands back the version
the row now holds (``UPDATE ... RETURNING``) instead of computing it from
the expected one; no row back, the row was not as the caller saw it."""


def compare_and_set(conn: sqlite3.Connection, delivery_id: str,
                    expected_state: str, expected_version: int,
                    to_state: str) -> int | None:
    moved = conn.execute(
        "UPDATE deliveries SET state = :to_state, version = version + 1"
        " WHERE id = :id AND (state, version) = (:expected_state, :expected_version)"
        " RETURNING version",
        {"id": delivery_id, "to_state": to_state,
         "expected_state": expected_state,
         "expected_version": expected_version}).fetchone()
    return None if moved is None else moved[0]
