"""WRONG ANSWER to exercise 10.2 (chapter 10): the generation without the owner.

The mistake: a write lands if it names the newest generation, the work is
running and the lease has not ended, whoever offers it. The fence compares the
owner too: a worker presenting another's generation (a copied token, a
confused restart that kept the number) is refused ("another owner").
Caught by ``another_worker_presents_the_live_generation`` (a history written out) and
``test_drawn_histories_are_judged_as_the_fence_judges_them``.
"""


def same_claim(row, write):
    return write.generation == row["generation"]  # whoever presents it
