"""Every seconds option of every program refuses what float() would take but a
person never meant (inf, nan, 1e999, another script's digits), in one line
with exit 2, before anything runs (issue 35)."""

import subprocess
import sys

import pytest

JOURNAL_WORKER = ("-m", "crashcourse.workers.journal_worker")
# (program argv before the option, the option); the other arguments are
# valid enough that only the option can be the refusal.
PROGRAMS = [
    (["-m", "crashcourse.workers.shop_worker", "drain", "--db", "x.db"], "--ttl"),
    (["-m", "crashcourse.workers.shop_worker", "drain", "--db", "x.db"], "--wait"),
    (["-m", "crashcourse.workers.host_worker"], "--ttl"),
    (["-m", "crashcourse.workers.host_worker"], "--wait"),
    (["-m", "crashcourse.workers.host_worker"], "--patience"),
    (["-m", "crashcourse.services.supplier.server", "--db", "s.db"], "--hold-first"),
    ([*JOURNAL_WORKER, "--dir", ".", "--task", "t"], "--ttl"),
    ([*JOURNAL_WORKER, "--dir", ".", "--task", "t"], "--wait"),
    (["-m", "crashcourse.workers.workflow_worker", "--dir", ".", "--workflow", "w",
      "--who", "p", "--url", "http://127.0.0.1:1"], "--lease"),
    (["-m", "crashcourse.workers.workflow_worker", "--dir", ".", "--workflow", "w",
      "--who", "p", "--url", "http://127.0.0.1:1"], "--patience"),
]
NOT_MEANT = ["inf", "nan", "1e999", "\u0663", "\u0660.\u0665"]  # Arabic-Indic 3, 0.5


@pytest.mark.parametrize("value", NOT_MEANT)
@pytest.mark.parametrize(("argv", "option"), PROGRAMS,
                         ids=[f"{a[1].rsplit('.', 1)[-1]}{o}" for a, o in PROGRAMS])
def test_a_seconds_option_refuses_what_a_person_never_meant(tmp_path, argv, option,
                                                            value):
    done = subprocess.run([sys.executable, *argv, option, value], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr  # usage + one line
    assert "Traceback" not in done.stderr
    assert option in done.stderr  # refused for the option, not for what follows
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written
