"""crashcourse.book, the chapters' kit: check, fresh_folder, table, checkpoint runs.

The checkpoint helpers run against a tiny fake checkpoints folder (real child
processes, a few lines of stdlib each), so these tests take well under a second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from crashcourse import book

ROOT = Path(__file__).resolve().parents[2]

# A stand-in checkpoint: writes its flags and its own --output path as evidence
# to a NEW file, says something on stdout and stderr, exits with --exit.
FAKE = textwrap.dedent("""
    import argparse, json, sys
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with open(args.output, "x") as handle:
        json.dump({"quick": args.quick, "output": args.output}, handle)
    print("to stdout")
    print("[1/1] the only trial: FAILS (row 7 missing)" if args.exit else
          "[1/1] the only trial: holds", file=sys.stderr)
    sys.exit(args.exit)
""")
SLOW = "import time\ntime.sleep(30)\n"
# Two trials, the second held until the parent has seen the first one's line
# (it creates the file the script waits for): streamed, not read at the end.
STREAMED = textwrap.dedent("""
    import argparse, os, sys, time
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--gate", required=True)
    parser.add_argument("--then-silent", action="store_true")
    args = parser.parse_args()
    print("[1/2] first: holds", file=sys.stderr, flush=True)
    deadline = time.monotonic() + 60  # a bound only: the parent touches it
    while not os.path.exists(args.gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    if args.then_silent:
        time.sleep(30)
    print("[2/2] second: holds" if os.path.exists(args.gate) else "never seen",
          file=sys.stderr, flush=True)
    open(args.output, "x").write("{}")
""")


@pytest.fixture
def fake_checkpoints(tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    (folder / "ch99_fake.py").write_text(FAKE)
    (folder / "ch99_slow.py").write_text(SLOW)
    (folder / "ch99_streamed.py").write_text(STREAMED)
    monkeypatch.setattr(book, "CHECKPOINTS", folder)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # fresh folders here
    return folder


def remove_fresh_folder(evidence: dict) -> None:
    """A run whose status was as expected leaves no folder behind."""
    folder = Path(evidence["output"]).parent
    assert folder.parent == Path(tempfile.gettempdir())
    assert not folder.exists()


def test_check_prints_label_and_value_and_returns_the_value(capsys):
    assert book.check("payments at the end", 1, 1) == 1
    assert book.check("rows", [1, 2], [1, 2]) == [1, 2]
    assert capsys.readouterr().out == "payments at the end: 1\nrows: [1, 2]\n"


def test_check_raises_with_got_and_expected(capsys):
    with pytest.raises(AssertionError) as raised:
        book.check("exit status", "0", 0)
    assert str(raised.value) == "exit status: got '0', expected 0"
    assert capsys.readouterr().out == "exit status: 0\n"


def test_check_adds_why_on_its_own_line():
    with pytest.raises(AssertionError) as raised:
        book.check("exit status", 1, 0, why="[3/7] kill_after_payment: FAILS")
    assert str(raised.value) == (
        "exit status: got 1, expected 0\n[3/7] kill_after_payment: FAILS")


def test_table_shows_rows_as_html_cells_and_as_aligned_text():
    shown = book.table(["side", "ms"], [["bare", 2.0], ["a <b> & c", 133.1]])
    html = shown._repr_html_()
    assert html.count("<tr>") == 3, "one header row and one row per result"
    assert "<td>a &lt;b&gt; &amp; c</td>" in html, "a cell's text is escaped"
    assert '<td style="text-align: right">133.1</td>' in html, "numbers align right"
    assert str(shown).splitlines() == ["side          ms",
                                       "bare         2.0",
                                       "a <b> & c  133.1"], "columns line up as text"
    assert repr(shown) == str(shown), "nbval compares the text a notebook stores"
    written = book.table(["side", "per s"], [["ours", "12,345"], ["bare", "678"]])
    assert str(written).splitlines()[1:] == ["ours  12,345", "bare     678"], (
        "a number written with separators aligns right too")


def test_table_names_groups_of_columns_above_them():
    shown = book.table(["variant", "before", "ack", "before", "ack"],
                       [["dbos", "0/1", "1/1", "0/1", "0/1"]],
                       over=[("", 1), ("none", 2), ("action", 2)])
    assert '<th colspan="2">none</th><th colspan="2">action</th>' in (
        shown._repr_html_()), "a group's header spans its columns"
    assert str(shown).splitlines() == ["         none         action",
                                       "variant  before  ack  before  ack",
                                       "dbos     0/1     1/1  0/1     0/1"], (
        "a group's name starts over its first column in the text")
    with pytest.raises(ValueError, match="groups spanning 4 columns over 5"):
        book.table(shown.columns, shown.rows, over=[("none", 2), ("action", 2)])


def test_table_refuses_a_row_that_does_not_fit_its_columns():
    with pytest.raises(ValueError, match="a row of 1 cells under 2 columns"):
        book.table(["side", "ms"], [["bare"]])


def test_fresh_folder_is_new_and_empty_each_call():
    first, second = book.fresh_folder("ch99"), book.fresh_folder("ch99")
    try:
        assert first != second
        for folder in (first, second):
            assert folder.is_dir() and list(folder.iterdir()) == []
            assert folder.name.startswith("ch99-")
    finally:
        shutil.rmtree(first)
        shutil.rmtree(second)


def test_the_checkpoints_folder_is_the_checkout_s():
    assert book.CHECKPOINTS == ROOT / "checkpoints"
    assert book.CHECKPOINT_TIMEOUT == 300


def test_start_checkpoint_returns_the_run_whatever_its_status(fake_checkpoints,
                                                               tmp_path):
    output = tmp_path / "evidence.json"
    done = book.start_checkpoint("ch99_fake", "--exit", "3", output=output)
    assert isinstance(done, book.CheckpointRun)
    assert (done.returncode, done.stdout, done.output) == (3, "to stdout\n", output)
    assert "FAILS (row 7 missing)" in done.stderr
    assert done.evidence == {"quick": False, "output": str(output)}


def test_start_checkpoint_passes_the_flags_before_the_output(fake_checkpoints,
                                                             tmp_path):
    done = book.start_checkpoint("ch99_fake", "--quick", output=tmp_path / "e.json")
    assert done.returncode == 0 and done.evidence["quick"] is True


def test_start_checkpoint_is_bounded(fake_checkpoints, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        book.start_checkpoint("ch99_slow", output=tmp_path / "e.json", timeout=0.5)


def test_start_checkpoint_shows_each_line_as_it_arrives(fake_checkpoints, tmp_path):
    gate = tmp_path / "seen-first"
    seen = []

    def on_line(line):
        seen.append(line)
        gate.touch()  # the script goes on only once its first line was seen

    done = book.start_checkpoint("ch99_streamed", "--gate", str(gate),
                                 output=tmp_path / "e.json", on_line=on_line)
    assert done.returncode == 0, done.stderr
    assert seen == ["[1/2] first: holds", "[2/2] second: holds"]
    assert done.stderr == "[1/2] first: holds\n[2/2] second: holds\n"


def test_start_checkpoint_ends_a_run_that_falls_silent(fake_checkpoints, tmp_path):
    # The silence is counted from the start, so the first line must come
    # within it: a bare Python start took 0.5-0.9 s at load 31 on this
    # project's two cores (issue 36), where the 1 s this had left no room.
    # 5 s is 6x that; the run's own silence is 30 s, so only this ends it.
    gate = tmp_path / "seen-first"
    with pytest.raises(subprocess.TimeoutExpired) as ended:
        book.start_checkpoint("ch99_streamed", "--gate", str(gate), "--then-silent",
                              output=tmp_path / "e.json",
                              on_line=lambda line: gate.touch(), quiet_timeout=5.0)
    assert ended.value.stderr == "[1/2] first: holds\n"  # what it said, kept


def test_start_checkpoint_streamed_is_bounded_too(fake_checkpoints, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        book.start_checkpoint("ch99_slow", output=tmp_path / "e.json", timeout=0.5,
                              on_line=print)


def test_run_checkpoint_checks_the_status_and_returns_the_evidence(
    fake_checkpoints, capsys
):
    evidence = book.run_checkpoint("ch99_fake", "--quick")
    try:
        assert evidence["quick"] is True
        output = Path(evidence["output"])
        assert output.name == "ch99_fake.json"
        assert output.parent.name.startswith("ch99_fake-")  # a fresh folder
        assert capsys.readouterr().out == "ch99_fake exit status: 0\n"
    finally:
        remove_fresh_folder(evidence)


def test_run_checkpoint_writes_a_new_file_each_time(fake_checkpoints):
    first = book.run_checkpoint("ch99_fake")
    second = book.run_checkpoint("ch99_fake")
    try:
        assert first["output"] != second["output"]
    finally:
        remove_fresh_folder(first)
        remove_fresh_folder(second)


def test_run_checkpoint_shows_stderr_when_the_status_surprises(fake_checkpoints):
    with pytest.raises(AssertionError) as raised:
        book.run_checkpoint("ch99_fake", "--exit", "1")
    message = str(raised.value)
    assert message.startswith("ch99_fake exit status: got 1, expected 0\n")
    assert "[1/1] the only trial: FAILS (row 7 missing)" in message
    (kept,) = Path(tempfile.gettempdir()).iterdir()  # kept for a look at it
    assert (kept / "ch99_fake.json").is_file()


def test_run_checkpoint_accepts_an_expected_failure(fake_checkpoints):
    evidence = book.run_checkpoint("ch99_fake", "--exit", "1", expect=1)
    remove_fresh_folder(evidence)


def test_a_missing_checkpoints_folder_is_explained(tmp_path, monkeypatch):
    monkeypatch.setattr(book, "CHECKPOINTS", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="checkout of the book"):
        book.start_checkpoint("ch01_operation_keys", output=tmp_path / "e.json")


def test_an_unknown_checkpoint_is_named(fake_checkpoints, tmp_path):
    with pytest.raises(FileNotFoundError, match="ch98_missing"):
        book.start_checkpoint("ch98_missing", output=tmp_path / "e.json")


def test_evidence_is_json_read_from_output(tmp_path):
    output = tmp_path / "e.json"
    output.write_text(json.dumps({"trials": [{"holds": True}]}))
    run = book.CheckpointRun(0, "", "", output)
    assert run.evidence == {"trials": [{"holds": True}]}
