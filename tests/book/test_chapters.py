"""The book's own tooling: pairs in sync, executed in order, chapters complete."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
# Appendices are built and checked like chapters (pair, execution, kit, a
# figure) but teach no mechanism: no exercises, recall questions or
# vocabulary. Named one by one, so no chapter can slip out of the shape rules.
APPENDICES = {"13_measurements.md"}
TEACHING = [md for md in CHAPTERS if md.name not in APPENDICES]
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


def test_each_appendix_exists_and_says_it_is_one():
    for name in APPENDICES:
        title = (BOOK / name).read_text().split("\n# ", 1)[1].split("\n", 1)[0]
        assert title.startswith("Appendix · "), name


@pytest.mark.parametrize("md", TEACHING, ids=lambda p: p.stem)
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


# Plumbing is folded (issue 32): a reader meets the outputs and the figure,
# and unfolds the imports, colours and labels only when curious.
RUNS = ("check(", "harness", "run_checkpoint", "start_checkpoint")


def folded(cell) -> bool:
    return "hide-input" in cell.get("metadata", {}).get("tags", [])


def only_draws(cell) -> bool:
    """A cell that ends in its figure and runs and checks nothing: colours,
    labels and layout from evidence an earlier cell read."""
    source = "".join(cell["source"]).strip()
    return (source.splitlines()[-1:] == ["fig"]
            and not any(run in source for run in RUNS))


def code_cells(md: Path) -> list[dict]:
    built = json.loads(md.with_suffix(".ipynb").read_text())
    return [cell for cell in built["cells"] if cell["cell_type"] == "code"]


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_the_setup_cell_is_folded(md):
    """A chapter's first code cell (its imports and helpers) is shown folded,
    ``:tags: [hide-input]``, as on the website: its outputs show first."""
    setup = code_cells(md)[0]
    assert folded(setup), f"{md.name}: the setup cell is not folded (hide-input)"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_a_cell_that_only_draws_is_folded(md):
    """Every cell that only turns read evidence into a figure is folded."""
    shown = ["".join(cell["source"]).splitlines()[0] for cell in code_cells(md)
             if only_draws(cell) and not folded(cell)]
    assert shown == [], f"{md.name}: drawing cells shown unfolded: {shown}"


def test_only_draws_tells_a_drawing_cell_from_an_experiment():
    def cell(source):
        return {"source": source, "metadata": {}}
    assert only_draws(cell("colours = {}\nfig = figures.state_grid(rows)\nfig\n")), (
        "a cell of colours ending in its figure is plumbing")
    assert not only_draws(cell("n = check('rows', 1, 1)\nfig = draw(n)\nfig")), (
        "a cell that checks a value the prose relies on stays shown")
    assert not only_draws(cell("agent = harness.start(cmd)\nfig")), (
        "a cell that runs an experiment stays shown")
    assert not only_draws(cell("fig = draw()\nprint(fig)")), (
        "a cell that does not end in its figure is not a drawing cell")


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


# What the reviews of issue 20 asked of every chapter, kept for every one.
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def prose(md: Path) -> str:
    """The chapter's text without its header and code cells."""
    text = md.read_text().split("\n---\n", 1)[-1]
    return FENCE.sub("", text)


@pytest.mark.parametrize("md", TEACHING, ids=lambda p: p.stem)
def test_every_recall_question_has_an_answer_to_unfold(md):
    text = md.read_text()
    recall = text.split("## Active recall", 1)[1].split("\n## ", 1)[0]
    questions = re.findall(r"^\*\*\d+\. .+", recall, re.M)
    answers = recall.count(":::{admonition} Answer\n:class: dropdown\n")
    assert len(questions) >= 3 and answers == len(questions)


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_no_check_restates_a_kill_or_a_verdict(md):
    """``Worker.kill()`` raises unless the status is -9, and ``run_checkpoint``
    unless every trial held: a check of either can never fail (nor can one of
    ``kill_and_resume``'s exit status)."""
    code = "\n".join(FENCE.findall(md.read_text()))
    assert not re.findall(r"check\([^()]*(?:\([^()]*\)[^()]*)*,\s*-9\)", code)
    assert "interrupted_returncode, -9" not in code
    assert not re.search(r"\[\"held\"\]", code)


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_prose_stays_under_four_thousand_words(md):
    assert len(prose(md).split()) <= 4000


def test_every_path_the_prose_names_exists():
    """A chapter, the README or CONTRIBUTING that sends a reader to
    ``tests/...py``, ``src/...py``, ``checkpoints/...py`` or ``bench/...py``
    names a file that is there (tests moved into topic folders once, and three
    chapters kept the old paths)."""
    named = re.compile(r"\b((?:tests|src|checkpoints|bench|tools)/[\w./-]+\.py)\b")
    sources = [*sorted(BOOK.glob("[0-9][0-9]_*.md")), ROOT / "README.md",
               ROOT / "CONTRIBUTING.md"]
    missing = [f"{source.name}: {path}" for source in sources
               for path in named.findall(source.read_text(encoding="utf-8"))
               if not (ROOT / path).exists() and "NN" not in path]  # a pattern
    assert missing == []


def toc_parts() -> dict[str, list[str]]:
    """The website's table of contents (site/_toc.yml): each part's caption and
    the chapter sources its entries name, globs expanded as Sphinx does."""
    import fnmatch

    import yaml

    toc = yaml.safe_load((ROOT / "site" / "_toc.yml").read_text())
    docs = [md.relative_to(ROOT).with_suffix("").as_posix() for md in CHAPTERS]
    parts = {}
    for part in toc["parts"]:
        named = []
        for entry in part["chapters"]:
            pattern = entry.get("glob") or entry["file"]
            named += [doc for doc in docs if fnmatch.fnmatchcase(doc, pattern)]
        parts[part["caption"]] = named
    return parts


def test_the_website_lists_every_chapter_once_and_the_appendices_after():
    """A chapter the table of contents misses is a page the website never
    builds: every book/NN_*.md is named once, teaching chapters under
    "Chapters" in order, appendices under "Appendix"."""
    parts = toc_parts()
    book = lambda mds: [md.relative_to(ROOT).with_suffix("").as_posix()  # noqa: E731
                        for md in mds]
    assert parts["Chapters"] == book(TEACHING)
    assert parts["Appendix"] == book(md for md in CHAPTERS if md.name in APPENDICES)
