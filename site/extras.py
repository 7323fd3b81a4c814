"""What the website adds to Jupyter Book: links to each chapter's two files, and
one repair of the pinned versions' page head.

A chapter page is rendered from ``book/NN_slug.ipynb``. Readers who want to run
it need that notebook; contributors edit ``book/NN_slug.md``, its jupytext
source. A line under the title links to both, copied beside the page
(``_build/html/book/``), so the links are plain relative ones that work from a
folder as well as from a server.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes

CHAPTERS = "book/"
SUFFIXES = (".ipynb", ".md")


def chapter_files(app, docname: str) -> list[Path]:
    return [Path(app.srcdir, docname + suffix) for suffix in SUFFIXES]


def add_source_links(app, doctree) -> None:
    docname = app.env.docname
    sections = list(doctree.findall(nodes.section))
    if not docname.startswith(CHAPTERS) or not sections:
        return
    ipynb, md = (path.name for path in chapter_files(app, docname))
    line = nodes.paragraph(
        "", "", nodes.Text("Run it: "),
        nodes.reference("", ipynb, refuri=ipynb),
        nodes.Text(" (the notebook, with its outputs) · Source: "),
        nodes.reference("", md, refuri=md),
        nodes.Text(" (MyST text, paired by jupytext)"),
        classes=["chapter-source-links"],
    )
    sections[0].insert(1, line)  # right after the title


def copy_sources(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        if docname.startswith(CHAPTERS):
            for path in chapter_files(app, docname):
                target = Path(app.outdir, docname).parent / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    """Sphinx 7.4 lists an inline script that an extension adds while reading
    twice, once with no file name (None) and once with an empty one (''). So
    every page ran sphinx-thebe's ``const THEBE_JS_URL = ...`` twice, and the
    second is a SyntaxError in the console. Keep the first of each script."""
    seen, kept = set(), []
    for script in context["script_files"]:
        key = (script.filename or None, script.priority,
               tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def write_index(app, exception) -> None:
    """``index.html`` is the landing page itself, not a redirect.

    The book's root is ``site/intro`` (the chapters stay in book/), so Sphinx
    writes no ``index.html`` and sphinx_external_toc leaves a bare
    ``<meta http-equiv="Refresh">`` there, which some browsers and headless
    screenshots stall on. This writes the landing page's own HTML instead,
    with ``<base href="site/intro.html">`` so that its relative links, style
    sheets, scripts and the theme's content root resolve exactly as on
    ``site/intro.html``. It runs before sphinx_external_toc's hook, which
    leaves an existing ``index.html`` alone."""
    if exception is not None or app.builder.name != "html":
        return
    root = app.config.root_doc
    if root == "index":
        return
    html = Path(app.outdir, root + ".html").read_text(encoding="utf8")
    head = "<head>"
    if head not in html:
        raise RuntimeError(f"no {head} in {root}.html: cannot write index.html")
    base = f'{head}\n    <base href="{root}.html">'
    index = Path(app.outdir, "index.html")
    index.write_text(html.replace(head, base, 1), encoding="utf8")


def setup(app):
    # Before sphinx_external_toc's build-finished hook (priority 500).
    app.connect("build-finished", write_index, priority=400)
    app.connect("doctree-read", add_source_links)
    app.connect("html-page-context", drop_repeated_scripts)
    app.connect("build-finished", copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
