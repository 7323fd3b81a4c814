"""A correct answer in another shape: the crash points walked in a plain loop,
the first broken one returned as soon as it is met."""


def first_break(recorder, count: int) -> int | None:
    for point in explore(recorder, lambda image: resume_payments(image, count)):
        for verdict in point.verdicts:
            if verdict["unpaid"] and not verdict["corrupt"]:
                return point.point
    return None
