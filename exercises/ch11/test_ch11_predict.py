"""Grades exercise 11.1: the prediction, point by point, against the crash
images the explorer builds and opens."""

import pytest

from crashcourse import powerloss as pl
from crashcourse.powerloss.images import explore
from crashcourse.powerloss.vfs import MARK, SYNC, WRITE, Event

WAL = "payments.sqlite-wal"


def by_hand(*events) -> list:
    return [Event(*event) for event in events]


@pytest.fixture
def lost_at(sealed):
    """The answer, sealed (exercises' conftest): a prediction is made from the
    run's events alone, recorded as it returns, before any crash image is
    built or opened."""
    return sealed("ch11", "predict", "solutions", "experiment").lost_at


def test_a_hand_made_run(lost_at):
    run = by_hand((WRITE, WAL, 32, b"frame"), (MARK, "ack", 0, "k1"),
                  (SYNC, WAL), (WRITE, WAL, 4152, b"frame"), (MARK, "ack", 0, "k2"),
                  (WRITE, WAL, 8272, b"frame"), (SYNC, WAL), (MARK, "ack", 0, "k3"))
    found = [lost_at(run, point) for point in range(len(run) + 1)]
    assert found == [[], [], ["k1"], [], [], ["k2"], ["k2"], [], []], (
        "the lost acknowledgements per crash point of the hand-made run are"
        f" {found}: an acknowledged payment is lost exactly at the points after"
        " its ack and before the sync that follows its frame")


def measured(recorder) -> list[list[str]]:
    """At every crash point: the acknowledged payments its image lacks."""
    points = explore(recorder, pl.judge_service)
    return [sorted(set(recorder.marked(pl.ACK, p.point)) - set(p.verdicts[0]["paid"]))
            for p in points]


@pytest.mark.parametrize("mode", [pl.Mode("WAL", "NORMAL"), pl.Mode("WAL", "FULL"),
                                  pl.Mode("WAL", "OFF")], ids=str)
@pytest.mark.parametrize("autocheckpoint", [8, None], ids=["checkpoints", "none"])
def test_every_point_of_a_real_run(lost_at, tmp_path, mode, autocheckpoint):
    """The service held open as a server holds it: 3 payments, the WAL
    checkpointed every 8 pages or never before the close."""
    recorder = pl.service_run(tmp_path, mode, 3, autocheckpoint=autocheckpoint)
    predicted = [sorted(lost_at(list(recorder.events), point))
                 for point in range(len(recorder.events) + 1)]
    found = measured(recorder)
    wrong = [(point, p, m) for point, (p, m) in enumerate(zip(predicted, found,
                                                               strict=False))
             if p != m]  # (a prediction of the wrong length: the assert says)
    assert predicted == found, (
        f"the prediction differs from the crash images at {len(wrong)} point(s)"
        f" of {len(found)} ({len(predicted)} predicted); (point, predicted,"
        f" measured), first {wrong[:3]}")
