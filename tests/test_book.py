"""The book's own tooling: pairs in sync, executed in order, chapters complete."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
END_SECTIONS = ("Exercises", "Active recall", "Vocabulary", "Evidence limits")


def load_tool():
    path = ROOT / "tools" / "notebooks.py"
    spec = importlib.util.spec_from_file_location("notebooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


notebooks = load_tool()


def test_there_are_chapters():
    assert [md.name[:2] for md in CHAPTERS][:3] == ["00", "01", "02"]


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_pair_in_sync_and_executed(md):
    assert notebooks.pair_problems(md) == []


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_end_sections(md):
    headings = [line.lstrip("#").strip() for line in md.read_text().splitlines()
                if line.startswith("## ")]
    missing = [s for s in END_SECTIONS if not any(h.startswith(s) for h in headings)]
    assert missing == []


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_a_figure(md):
    built = json.loads(md.with_suffix(".ipynb").read_text())
    kinds = {kind for cell in built["cells"] for out in cell.get("outputs", [])
             for kind in out.get("data", {})}
    assert "image/png" in kinds


@pytest.fixture
def pair(tmp_path):
    """A copy of chapter 00's pair to tamper with."""
    md = CHAPTERS[0]
    shutil.copy(md, tmp_path / md.name)
    shutil.copy(md.with_suffix(".ipynb"), tmp_path / md.with_suffix(".ipynb").name)
    return tmp_path / md.name


def test_check_catches_an_edited_source(pair):
    fence = "```{code-cell} ipython3\n"
    pair.write_text(pair.read_text().replace(fence, fence + "# edited\n", 1))
    assert any("differs" in p for p in notebooks.pair_problems(pair))


def test_check_catches_an_unexecuted_cell(pair):
    ipynb = pair.with_suffix(".ipynb")
    built = json.loads(ipynb.read_text())
    code = [c for c in built["cells"] if c["cell_type"] == "code"]
    code[-1]["execution_count"] = None
    ipynb.write_text(json.dumps(built))
    assert any("execution counts" in p for p in notebooks.pair_problems(pair))


def test_check_catches_a_missing_notebook(pair):
    pair.with_suffix(".ipynb").unlink()
    assert any("missing" in p for p in notebooks.pair_problems(pair))


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_the_stored_kernel_is_the_one_jupyter_names(md):
    """JupyterLab rewrites a notebook whose kernelspec differs from the kernel's
    own on its first save: reading a chapter must leave ``git status`` clean."""
    from jupyter_client.kernelspec import KernelSpecManager

    stored = json.loads(md.with_suffix(".ipynb").read_text())["metadata"]
    installed = KernelSpecManager().get_kernel_spec("python3")
    assert stored["kernelspec"] == {"display_name": installed.display_name,
                                    "language": installed.language,
                                    "name": "python3"}
