"""The chapters' kit, introduced in chapter 00: the helpers every chapter uses.

- ``check`` prints a value the prose relies on and stops the notebook, saying
  why, when the value is not the one the text claims.
- ``fresh_folder`` gives a demonstration its own new, empty folder, so no
  cell ever reads rows an earlier run left behind.
- ``run_checkpoint`` runs ``checkpoints/NAME.py`` as a real child process,
  checks its exit status (its stderr is the reason shown when it differs) and
  returns the evidence it wrote to a new file.
- ``table`` shows rows of results as a table: an HTML table in a notebook
  and on the website, aligned columns of text anywhere else.
- ``start_checkpoint`` is the level below: it runs the script and hands back
  a ``CheckpointRun`` whatever the exit status (the tests and
  ``tools/run_checkpoints.py`` judge it themselves).

The checkpoints live beside ``src/`` in a checkout of the book, so these
helpers need the package installed editable from that checkout.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import crashcourse

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["CHECKPOINT_TIMEOUT", "CHECKOUT", "CHECKPOINTS", "check",
    "fresh_folder", "Table", "table", "CheckpointRun", "start_checkpoint",
    "run_checkpoint"]

# A quick checkpoint takes seconds on an idle machine; this bound leaves room
# for two loaded CI cores and still ends a run that hangs.
CHECKPOINT_TIMEOUT = 300.0
CHECKOUT = Path(crashcourse.__file__).resolve().parents[2]  # the repository
CHECKPOINTS = CHECKOUT / "checkpoints"
NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")  # a table's cell that aligns right


def check(label: str, value: object, expected: object, why: str | None = None):
    """Print ``label: value``; raise AssertionError unless it equals ``expected``.

    ``why`` (a worker's stderr, say) is added to the message. Returns ``value``
    (chapter 00)."""
    print(f"{label}: {value}")
    if value != expected:
        message = f"{label}: got {value!r}, expected {expected!r}"
        if why:
            message += "\n" + why
        raise AssertionError(message)
    return value


def fresh_folder(chapter: str) -> Path:
    """A new, empty temporary folder named after ``chapter`` (chapter 00)."""
    return Path(tempfile.mkdtemp(prefix=f"{chapter}-"))


@dataclass(frozen=True)
class Table:
    """Rows of results under named columns, shown as a table.

    Jupyter (and the website, from the stored output) shows the HTML; print,
    a terminal and nbval's comparison read the same cells as aligned text.
    Numbers are right-aligned in both. ``over`` names groups of columns, a
    header row above theirs: ((name, how many columns), ...) (chapter 12)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    over: tuple[tuple[str, int], ...] = ()

    def _numeric(self, index: int) -> bool:
        """Every cell of the column a number, or a number written out (1,234.5)."""
        return all(isinstance(row[index], (int, float)) or
                   NUMBER.fullmatch(str(row[index])) for row in self.rows)

    def _repr_html_(self) -> str:
        number = ' style="text-align: right"'  # numbers, as in the text

        def cells(tag: str, values) -> str:
            return "".join(
                f"<{tag}{number if self._numeric(i) else ''}>"
                f"{html.escape(str(value))}</{tag}>" for i, value in enumerate(values))
        groups = "".join(f'<th colspan="{span}">{html.escape(name)}</th>'
                         for name, span in self.over)
        head = (f"<thead>{f'<tr>{groups}</tr>' if groups else ''}"
                f"<tr>{cells('th', self.columns)}</tr></thead>")
        body = "".join(f"<tr>{cells('td', row)}</tr>" for row in self.rows)
        return f'<table class="crashcourse-table">{head}<tbody>{body}</tbody></table>'

    def __str__(self) -> str:
        texts = [list(map(str, self.columns))] + [list(map(str, r)) for r in self.rows]
        widths = [max(len(line[i]) for line in texts) for i in range(len(self.columns))]
        lines = ["  ".join(
            cell.rjust(width) if self._numeric(i) else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))).rstrip()
            for line in texts]
        if self.over:  # each group's name where its first column starts
            above, start = "", 0
            for name, span in self.over:
                at = sum(widths[:start]) + 2 * start
                above = (above + " " * max(at - len(above), 1 if above else 0)
                         + name)
                start += span
            lines.insert(0, above)
        return "\n".join(lines)

    __repr__ = __str__


def table(columns, rows, over=()) -> Table:
    """A ``Table`` of ``rows`` (each as many cells as ``columns``, the groups
    in ``over`` spanning them all); raises ValueError on a row of another
    length, so no cell lands under the wrong name (chapter 12)."""
    columns = tuple(columns)
    rows = tuple(tuple(row) for row in rows)
    over = tuple((str(name), int(span)) for name, span in over)
    if over and sum(span for _, span in over) != len(columns):
        raise ValueError(f"groups spanning {sum(span for _, span in over)} "
                         f"columns over {len(columns)}: {over!r}")
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} cells under {len(columns)} "
                             f"columns: {row!r}")
    return Table(columns, rows, over)


@dataclass(frozen=True)
class CheckpointRun:
    """One finished run of a checkpoint script (chapter 00)."""

    returncode: int
    stdout: str
    stderr: str
    output: Path

    @property
    def evidence(self) -> dict:
        """The JSON evidence the run wrote to ``output``."""
        return json.loads(self.output.read_text(encoding="utf-8"))


def _script(name: str) -> Path:
    """``checkpoints/{name}.py`` of this checkout, or a clear error."""
    if not CHECKPOINTS.is_dir():
        raise FileNotFoundError(
            f"no checkpoints folder at {CHECKPOINTS}: the checkpoints ship with a "
            "checkout of the book, so install crashcourse from one "
            "(pip install -e .)"
        )
    script = CHECKPOINTS / f"{name}.py"
    if not script.is_file():
        raise FileNotFoundError(f"no checkpoint {name!r} in {CHECKPOINTS}")
    return script


def start_checkpoint(
    name: str, *flags: str, output: str | Path, timeout: float = CHECKPOINT_TIMEOUT,
    on_line=None, quiet_timeout: float | None = None,
) -> CheckpointRun:
    """Run ``checkpoints/{name}.py *flags --output OUTPUT`` with this interpreter.

    Waits at most ``timeout`` seconds (subprocess.TimeoutExpired past that,
    the script killed) and returns the run whatever its exit status.
    ``on_line``, when given, is called with each line of the script's stderr
    as it arrives (its per-trial progress; still returned whole), and
    ``quiet_timeout`` ends a run that has printed nothing for that long
    (chapter 00)."""
    command = [sys.executable, str(_script(name)), *flags, "--output", str(output)]
    output = Path(output)
    if on_line is None:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)
        return CheckpointRun(done.returncode, done.stdout, done.stderr, output)
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as running:
        lines: list[str] = []
        stdout: list[str] = []
        # stdout is drained beside stderr, so a full pipe never stops the script.
        drain = threading.Thread(target=lambda: stdout.append(running.stdout.read()),
                                 daemon=True)
        drain.start()
        began = last = time.monotonic()
        ended, expired = threading.Event(), threading.Event()

        def watch() -> None:  # the bound on the whole run and on its silences
            while not ended.wait(0.5):
                now = time.monotonic()
                if now - began > timeout or (
                        quiet_timeout is not None and now - last > quiet_timeout):
                    expired.set()
                    running.kill()
                    return

        watchdog = threading.Thread(target=watch, daemon=True)
        watchdog.start()
        try:
            for line in running.stderr:
                last = time.monotonic()
                lines.append(line)
                on_line(line.rstrip("\n"))
            running.wait()
        finally:
            ended.set()
            running.kill()  # a no-op once it has ended; never leaves it running
        watchdog.join(timeout=10)
        drain.join(timeout=10)
        if expired.is_set():
            raise subprocess.TimeoutExpired(command, timeout, "".join(stdout),
                                            "".join(lines))
    return CheckpointRun(running.returncode, "".join(stdout), "".join(lines), output)


def run_checkpoint(
    name: str, *flags: str, expect: int = 0, timeout: float = CHECKPOINT_TIMEOUT
) -> dict:
    """Run a checkpoint into a new evidence file, check its exit status, return
    the evidence. On a surprise the AssertionError ends with its stderr
    (chapter 00)."""
    folder = fresh_folder(name)
    done = start_checkpoint(name, *flags, output=folder / f"{name}.json",
                            timeout=timeout)
    check(f"{name} exit status", done.returncode, expect, why=done.stderr[-3000:])
    found = done.evidence
    shutil.rmtree(folder)  # kept only when the check above stopped the chapter
    return found
