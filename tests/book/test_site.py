"""The website (`make book`) read in a real browser: headless Chromium.

Every page of ``_build/html`` is opened at a desktop width and at a phone's
(390 px), served by an http.server on 127.0.0.1 that this module starts and
stops (one per pytest worker, each with its own Chromium). A page passes when
its title shows, every image has loaded, the console stayed quiet, nothing was
fetched from off the machine or came back an error, every local link (and its
#fragment) resolves, each chapter shows all of its code cells, outputs, result
tables and figures (none shown so small at the desktop width that its smallest words,
tests/figures/test_legible.py's LEGIBLE_PX at the width it measured, are
smaller than the body's smallest text as the page renders it),
and the body does not scroll sideways on the phone. Every code and
output block of every page fits its box: at the desktop width its text is no
wider than the block (long lines wrap), and at both widths the block is no
wider than the article; on the phone a block may scroll inside itself; on
the chapters in UNWRAPPED no line needs the wrapping to fit. A
screenshot of each page at each width goes to ``artifacts/site/``.

It runs in .venv-site (Playwright driving Debian's chromium): ``make
site-test``, which ``make verify`` runs when Chromium is installed. The
expected counts come from the notebooks themselves, not from the site.
"""

from __future__ import annotations

import json
import os
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag

import pytest

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test runs in .venv-site: make site-test")

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "artifacts" / "site"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# This machine's network is closed: without these, Chromium keeps dialling out.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync"]
WIDTHS = {"desktop": {"viewport": {"width": 1280, "height": 900}},
          "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True}}
PHONE_WIDTH = WIDTHS["phone"]["viewport"]["width"]
WAIT_MS = 30_000

CHAPTERS = sorted(ROOT.glob("book/[0-9][0-9]_*.ipynb"))
PROMPTS = sorted(ROOT.glob("exercises/ch[0-9][0-9]/PROMPT.md"))
LANDING = ROOT / "site" / "intro.md"


def page_path(source: Path) -> str:
    """Where the site puts the page made from a source file."""
    return source.relative_to(ROOT).with_suffix(".html").as_posix()


def plain(title: str) -> str:
    """A markdown title as the page shows it (no backticks, no emphasis marks)."""
    return re.sub(r"[`*]", "", title).strip()


def markdown_title(text: str) -> str:
    return plain(next(line[2:] for line in text.splitlines() if line.startswith("# ")))


TABLE_CLASS = 'class="crashcourse-table"'


def notebook_expectations(ipynb: Path) -> dict:
    """Title and counts read from the committed notebook the page is made from."""
    cells = json.loads(ipynb.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    title = markdown_title("".join(
        "".join(c["source"]) + "\n" for c in cells if c["cell_type"] == "markdown"))
    return {"title": title, "code": len(code),
            "outputs": sum(1 for c in code if c["outputs"]),
            "images": sum(1 for c in code for o in c["outputs"]
                          if any(k.startswith("image/") for k in o.get("data", {}))),
            # results shown as tables (crashcourse.book.table), not as text
            "tables": sum("".join(o.get("data", {}).get("text/html", "")).count(
                TABLE_CLASS) for c in code for o in c["outputs"])}


PAGES = {page_path(LANDING): {"title": markdown_title(LANDING.read_text())}}
PAGES |= {page_path(nb): notebook_expectations(nb) for nb in CHAPTERS}
PAGES |= {page_path(md): {"title": markdown_title(md.read_text())} for md in PROMPTS}
ORDER = list(PAGES)  # landing page, chapters 00.., then the exercises' prompts


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url():
    """The built site on an http.server at 127.0.0.1, stopped after the module."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no site in {SITE}: run `make book` first")
    handler = partial(QuietHandler, directory=str(SITE))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_api.sync_playwright() as playwright:
        # Playwright gives each launch a new, empty profile and removes it on close.
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=WAIT_MS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def contexts(browser):
    """One browser context per width, shared by the module's pages."""
    opened = {name: browser.new_context(**options) for name, options in WIDTHS.items()}
    yield opened
    for context in opened.values():
        context.close()


@pytest.fixture(scope="module")
def link_status(contexts):
    """url -> (HTTP status, ids on that page), each local URL fetched once."""
    seen: dict[str, tuple[int, set[str]]] = {}

    def status(url: str) -> tuple[int, set[str]]:
        if url not in seen:
            response = contexts["desktop"].request.get(url, timeout=WAIT_MS)
            ids = set()
            if response.ok and url.endswith(".html"):
                ids = set(re.findall(r'\bid="([^"]+)"', response.text()))
            seen[url] = (response.status, ids)
        return seen[url]

    return status


class Visit:
    """One page opened in a new tab, with what the browser saw on the way."""

    def __init__(self, context, base: str, path: str):
        self.base = base
        self.page = context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self.console)
        self.page.on("pageerror", lambda error: self.problems.append(f"js: {error}"))
        self.page.on("request", self.request)
        self.page.on("response", self.response)
        self.page.on("requestfailed", lambda request: self.problems.append(
            f"failed: {request.url} {request.failure}"))
        # "load": every image, style sheet and script of the page has arrived.
        self.page.goto(base + path, wait_until="load", timeout=WAIT_MS)

    def console(self, message) -> None:
        if message.type == "error":
            where = message.location.get("url", "")
            self.problems.append(f"console: {message.text} {where}".strip())

    def request(self, request) -> None:
        if not request.url.startswith((self.base, "data:")):
            self.problems.append(f"left the machine: {request.url}")

    def response(self, response) -> None:
        if response.status >= 400:
            self.problems.append(f"{response.status}: {response.url}")

    def href(self, selector: str) -> str | None:
        """The absolute URL of the first link matching selector, if any."""
        links = self.page.locator(selector)
        return links.first.evaluate("a => a.href") if links.count() else None

    def screenshot(self, path: str, width: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        name = path.removesuffix(".html").replace("/", "_")
        self.page.screenshot(path=SHOTS / f"{name}-{width}.png", timeout=WAIT_MS)


@pytest.fixture
def visit(contexts, site_url):
    """``visit(path, "desktop" or "phone")`` -> a Visit, closed after the test."""
    opened = []

    def open_page(path: str, width: str) -> Visit:
        opened.append(Visit(contexts[width], site_url, path))
        return opened[-1]

    yield open_page
    for seen in opened:
        seen.page.close()


IMAGES_LOADED = """imgs => imgs.map(img => ({src: img.getAttribute('src'),
    ok: img.complete && img.naturalWidth > 0, drawn: img.naturalWidth,
    shown: img.getBoundingClientRect().width}))"""
# The smallest text of the article's body as the browser renders it: the
# computed font size of its paragraphs, list items, table cells, code and
# outputs (14 px code and outputs beside 16 px paragraphs, in this theme).
BODY_TEXT_PX = """article => Math.min(...[...article.querySelectorAll(
    'p, li, td, th, pre, code, .cell_output')]
  .filter(el => el.offsetWidth > 0 && el.innerText.trim())
  .map(el => parseFloat(getComputedStyle(el).fontSize)))"""
# How crashcourse.figures draws (read from its source: this test runs in
# .venv-site, without the runtime): tests/figures/test_legible.py holds every
# word of every figure at least LEGIBLE_PX tall when the PNG is shown at its
# own width, or scaled down to SHOWN_PX when it is wider. A page that shows
# the PNG at another width scales those words by the same ratio.
FIGURES = (ROOT / "src" / "crashcourse" / "figures" / "__init__.py").read_text()
DRAWN = {name: float(re.search(rf"^{name} = (\d+)\b", FIGURES, re.M).group(1))
         for name in ("SHOWN_PX", "LEGIBLE_PX")}


def smallest_word_px(image: dict) -> float:
    """How tall the page shows the figure's smallest words: LEGIBLE_PX at the
    width test_legible measured (its own, at most SHOWN_PX), scaled to the
    width shown (a pixel's rounding allowed)."""
    measured = min(image["drawn"], DRAWN["SHOWN_PX"])
    return DRAWN["LEGIBLE_PX"] * min(1.0, (image["shown"] + 1) / measured)


def smaller_than_the_body(images: list[dict], body_px: float) -> list[str]:
    """The figures whose smallest words the page shows smaller than the
    body's smallest text."""
    return [f"{i['src']}: drawn {i['drawn']} px wide, shown at {i['shown']:.0f} px:"
            f" its smallest words {smallest_word_px(i):.1f} px, the body's {body_px:g}"
            for i in images if smallest_word_px(i) < body_px]


def test_a_figure_smaller_than_the_body_text_is_caught():
    """The negative control: a 680 px figure the page shrinks to 600 px fails
    against 14 px code (its words 12.4 px); shown at its own width it passes;
    and no figure passes against text larger than LEGIBLE_PX."""
    shrunk = {"src": "shrunk.png", "drawn": 680, "shown": 600.0}
    fits = {"src": "fits.png", "drawn": 680, "shown": 680.0}
    caught = smaller_than_the_body([shrunk, fits], 14)
    assert [line.split(":")[0] for line in caught] == ["shrunk.png"]
    assert smaller_than_the_body([fits], DRAWN["LEGIBLE_PX"] + 1) != []


SHOWN = "els => els.filter(el => el.offsetWidth > 0 && el.offsetHeight > 0).length"


@pytest.mark.parametrize("path", ORDER)
def test_page_at_desktop_width(path, visit, link_status):
    expected = PAGES[path]
    seen = visit(path, "desktop")
    page = seen.page
    heading = page.locator("article h1").first
    assert heading.is_visible()
    assert expected["title"] in heading.inner_text()
    assert page.title().startswith(expected["title"])

    images = page.locator("article img").evaluate_all(IMAGES_LOADED)
    assert [i["src"] for i in images if not i["ok"]] == []
    if "code" in expected:  # a chapter: every cell, output and figure is there
        assert len(images) == expected["images"]
        # every figure's words at least as tall as the body's smallest text
        body_px = page.locator("article").first.evaluate(BODY_TEXT_PX)
        assert body_px >= 12, f"the body's smallest text is {body_px} px"
        small = smaller_than_the_body(images, body_px)
        assert small == [], "\n".join(small)
        cells = page.locator("article .cell_input")
        assert cells.count() == expected["code"]
        assert cells.evaluate_all(SHOWN) == expected["code"]
        tables = page.locator("article .cell_output table.crashcourse-table")
        assert tables.count() == expected["tables"], (
            "every result table of the notebook shows as a table on the page")
        outputs = page.locator("article .cell_output")
        assert outputs.count() == expected["outputs"]
        assert outputs.evaluate_all(SHOWN) == expected["outputs"]
        sources = page.locator(".chapter-source-links a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))")
        stem = Path(path).stem
        assert sources == [f"{stem}.ipynb", f"{stem}.md"]

    # Previous and next follow the table of contents: landing page, 00..09, prompts.
    at = ORDER.index(path)
    neighbours = [ORDER[i] if 0 <= i < len(ORDER) else None for i in (at - 1, at + 1)]
    assert [seen.href("a.left-prev"), seen.href("a.right-next")] == [
        None if n is None else seen.base + n for n in neighbours]

    hrefs = page.locator("a[href]").evaluate_all("as => as.map(a => a.href)")
    broken = []
    for href in sorted(set(hrefs)):
        target, fragment = urldefrag(href)
        if not target.startswith(seen.base):
            continue  # not ours to check (mailto:, another site)
        status, ids = link_status(target)
        if status != 200 or (fragment and target.endswith(".html")
                             and fragment not in ids):
            broken.append(f"{href} ({status})")
    assert not broken, "\n".join(broken)

    seen.screenshot(path, "desktop")
    assert not seen.problems, "\n".join(seen.problems)


# Every code block, output block and table of the article, measured against
# its box: the block itself when it scrolls or clips (a <pre>), else its
# nearest ancestor that does (the theme's scroll container around a table).
# "text" is how wide the content is, "box" how wide the box shows it, and
# "beyond" how far the box reaches past the article's right edge.
BLOCKS = """article => {
  const edge = article.getBoundingClientRect().right;
  const boxOf = el => {
    let box = el;
    while (box !== article && getComputedStyle(box).overflowX === 'visible') {
      box = box.parentElement;
    }
    return box;
  };
  return [...article.querySelectorAll('pre, table')]
    .filter(el => el.offsetWidth > 0)
    .map((el, i) => {
      const box = boxOf(el);
      return {i, tag: el.tagName, text: box === el ? el.scrollWidth : el.offsetWidth,
              box: box.clientWidth,
              beyond: Math.round(box.getBoundingClientRect().right - edge),
              line: (el.innerText.split('\\n')
                     .sort((a, b) => b.length - a.length)[0] || '').slice(0, 60)};
    });
}"""


def overflowing(blocks: list[dict], width: str) -> list[str]:
    """The blocks that do not fit: text wider than its box (desktop only) or a
    box reaching past the article (both widths). One line per block."""
    return [f"{b['tag']} #{b['i']}: text {b['text']} px in a {b['box']} px box, "
            f"{b['beyond']} px past the article: {b['line']!r}"
            for b in blocks
            if b["beyond"] > 1 or (width == "desktop" and b["text"] > b["box"] + 1)]


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("path", ORDER)
def test_every_block_fits_its_box(path, width, visit):
    seen = visit(path, width)
    blocks = seen.page.locator("article").first.evaluate(BLOCKS)
    if "code" in PAGES[path]:  # a chapter: the selector still finds its cells
        assert len(blocks) >= PAGES[path]["code"], blocks
    wide = overflowing(blocks, width)
    assert not wide, (f"{len(wide)} block(s) wider than their box at {width}:\n"
                      + "\n".join(wide))


# The chapters whose code and outputs fit at the desktop width without the
# site's wrapping: their lines are short and their tables printed as tables
# (issue 32). A wrapped line still fits its box on every other page.
UNWRAPPED = [page_path(ROOT / "book" / "11_when_the_machine_loses_power.ipynb")]
NO_WRAP = ".bd-article pre { white-space: pre !important; }"


@pytest.mark.parametrize("path", UNWRAPPED)
def test_every_line_fits_its_box_unwrapped(path, visit):
    """At 1280 px, with the site's pre-wrap turned off, no line of a code or
    output block is wider than its box. Chapter 11 had 22 such blocks (690 to
    993 px in a 684 px box) before its lines were shortened."""
    assert path in PAGES, f"{path} is not a page of the book"
    page = visit(path, "desktop").page
    page.add_style_tag(content=NO_WRAP)
    blocks = page.locator("article").first.evaluate(BLOCKS)
    wide = overflowing(blocks, "desktop")
    assert not wide, (f"{len(wide)} block(s) wider than their box unwrapped:\n"
                      + "\n".join(wide))


@pytest.mark.parametrize("path", ORDER)
def test_page_at_phone_width(path, visit):
    seen = visit(path, "phone")
    page = seen.page
    assert page.locator("article h1").first.is_visible()
    widths = page.evaluate("""() => ({view: window.innerWidth,
        body: document.body.scrollWidth, doc: document.documentElement.scrollWidth})""")
    # A phone widens its layout viewport (innerWidth) to fit what overflows.
    assert max(widths.values()) <= PHONE_WIDTH, f"wider than the phone: {widths}"
    seen.screenshot(path, "phone")
    assert not seen.problems, "\n".join(seen.problems)


def test_landing_page_says_how_to_run_it_and_lists_every_chapter(visit):
    assert CHAPTERS and PROMPTS
    page = visit(ORDER[0], "desktop").page
    text = page.locator("article").inner_text()
    assert "make lab" in text and "make verify" in text
    listed = page.locator("article .toctree-wrapper a").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))")
    assert [href.removeprefix("../") for href in listed] == ORDER[1:]


def test_index_html_is_the_landing_page_not_a_redirect(visit, link_status):
    """The README sends readers to _build/html/index.html: it must be the
    landing page itself (a bare meta-refresh stalls headless screenshots)."""
    html = (SITE / "index.html").read_text()
    assert 'http-equiv="Refresh"' not in html and "<article" in html
    seen = visit("index.html", "desktop")
    page = seen.page
    assert page.url == seen.base + "index.html"  # no redirect happened
    assert PAGES[ORDER[0]]["title"] in page.locator("article h1").first.inner_text()
    text = page.locator("article").inner_text()
    assert "make lab" in text and "make verify" in text
    listed = page.locator("article .toctree-wrapper a").evaluate_all(
        "as => as.map(a => a.href)")
    assert listed == [seen.base + path for path in ORDER[1:]]
    images = page.locator("img").evaluate_all(IMAGES_LOADED)
    assert [i["src"] for i in images if not i["ok"]] == []
    hrefs = page.locator("a[href]").evaluate_all("as => as.map(a => a.href)")
    broken = [href for href in sorted(set(hrefs)) if href.startswith(seen.base)
              and link_status(urldefrag(href)[0])[0] != 200]
    assert not broken, "\n".join(broken)
    seen.screenshot("index.html", "desktop")
    assert not seen.problems, "\n".join(seen.problems)


def test_search_finds_a_chapter_by_its_title(visit):
    """Sphinx's search (its index is built with the site) answers in the page."""
    chapter = ORDER[1]
    words = re.sub(r"[^\w\s]", " ", PAGES[chapter]["title"]).split()
    seen = visit("search.html?q=" + "+".join(words), "desktop")
    seen.page.locator("#search-results .search-summary").wait_for(timeout=WAIT_MS)
    found = seen.page.locator("#search-results ul.search a").evaluate_all(
        "as => as.map(a => a.href)")
    assert any(href.startswith(seen.base + chapter) for href in found), found
    assert not seen.problems, "\n".join(seen.problems)
