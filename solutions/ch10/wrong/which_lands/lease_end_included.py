"""A write at the lease's end lands."""


def in_lease(row, write):
    return write.at <= row["expires"]
