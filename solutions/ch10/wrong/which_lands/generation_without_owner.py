"""The generation without the owner. Caught by
``test_drawn_histories_are_judged_as_the_fence_judges_them``."""


def same_claim(row, write):
    return write.generation == row["generation"]  # whoever presents it
