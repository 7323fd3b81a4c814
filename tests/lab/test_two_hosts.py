"""A worker that ends before the line a trial waits for says why: its exit
status, what it printed last and its stderr, in the trial's error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crashcourse.lab.two_hosts import WorkerEnded, said


def child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_worker_that_ends_early_is_named_with_its_reason():
    process = child("import sys; print('ready {}'); print('report {\"finished\": 4}');"
                    " sys.stderr.write('a-1 never reached its hold: took work-1\\n');"
                    " sys.exit(5)")
    with pytest.raises(WorkerEnded) as ended:
        said(process, "writing", timeout=60)
    message = str(ended.value)
    assert f"pid {process.pid} ended before 'writing', exit 5" in message
    assert 'report {"finished": 4}' in message  # the last thing it said
    assert "a-1 never reached its hold: took work-1" in message


def test_a_silent_end_still_gives_its_status():
    process = child("pass")
    with pytest.raises(WorkerEnded, match=r"exit 0; it said \[\]; stderr:"
                       r" \(nothing on stderr\)"):
        said(process, "writing", timeout=60)


def test_the_line_waited_for_is_returned():
    process = child("print('noise'); print('writing {\"backend\": 7}')")
    assert said(process, "writing", timeout=60) == {"backend": 7}
    process.wait(timeout=60)
