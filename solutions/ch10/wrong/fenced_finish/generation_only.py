"""The generation alone. Caught by
``test_a_lapsed_lease_is_refused_though_nobody_took_the_work`` and
``test_another_owner_with_the_same_generation_is_refused`` and
``test_a_finished_claim_cannot_finish_twice``."""


def fence_clause() -> str:
    return "id = :id AND generation = :generation"
