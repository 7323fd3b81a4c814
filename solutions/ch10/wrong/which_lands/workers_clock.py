"""The writer's own clock."""


def in_lease(row, write):
    return write.local_clock < row["expires"]  # the worker's host, not the database
