"""The lease's last instant kept. Caught by
``test_the_instant_a_lease_ends_belongs_to_the_next_claimer``."""


def lease_live() -> str:
    return f"expires >= {SERVER_NOW}"
