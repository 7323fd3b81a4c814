"""The status left out. Caught by
``test_every_part_of_the_fence_refuses_on_its_own``."""


def fence_clause() -> str:
    return f"{names_this_claim()} AND {lease_live()}"
