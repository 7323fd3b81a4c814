"""A correct answer in other SQL: the claim named by one row-value comparison
and the lease compared from the other side. The same fence, differently
spelled; a grader that matched the reference's text would refuse it."""


def names_this_claim() -> str:
    return "(id, generation, owner) = (:id, :generation, :owner)"


def lease_live() -> str:
    return f"{SERVER_NOW} < expires"
