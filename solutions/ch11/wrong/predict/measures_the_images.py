"""WRONG ANSWER to exercise 11.1 (chapter 11): the crash images measured, not
predicted.

The mistake: the answer finds the run's recorder in its caller and builds and
opens every crash image itself (the explorer), then reads which payments
each image lacks: the outcome read before it is "predicted". Caught by the
seal (exercises' conftest: a prediction opens no database), in
``test_every_point_of_a_real_run``.
"""


def lost_at(events: list, point: int, _reference=lost_at,  # noqa: F821
            _images={}) -> list[str]:  # noqa: B006 (kept between calls)
    import sys

    from crashcourse import powerloss
    from crashcourse.powerloss.images import explore

    frame = sys._getframe(1)
    while frame is not None and "recorder" not in frame.f_locals:
        frame = frame.f_back
    if frame is None:  # a hand-made run: nothing to measure
        return _reference(events, point)
    recorder = frame.f_locals["recorder"]
    if id(recorder) not in _images:
        _images[id(recorder)] = explore(recorder, powerloss.judge_service)
    image = _images[id(recorder)][point]
    return sorted(set(recorder.marked(powerloss.ACK, image.point))
                  - set(image.verdicts[0]["paid"]))
