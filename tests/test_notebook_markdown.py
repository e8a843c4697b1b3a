"""The notebooks' own Markdown is readable by everyone (issue 24, item 4): in every chapter the
headings run in order (one h1, first; no level skipped), every image has alt text, and every
link's text says where it goes (not "here", "this" or a bare URL).

The Markdown is rendered by nbconvert's renderer (the one the web edition uses), so code
blocks, raw HTML and $maths$ are read as the page shows them. No browser, no kernel.
"""
from __future__ import annotations

import html.parser
import re

import nbformat
import pytest

from browser_harness import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
VAGUE_LINK_TEXT = {"here", "click here", "this", "this link", "link", "there", "more", "read more",
                   "this page", "this article", "source"}
BARE_URL = re.compile(r"^(https?://|www\.)\S+$")


class _Reader(html.parser.HTMLParser):
    """Headings (level, text), images (alt or None) and links (text, href) of rendered Markdown."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.headings, self.images, self.links = [], [], []
        self._heading = self._link = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = [int(tag[1]), ""]
        elif tag == "a" and "anchor-link" not in (attrs.get("class") or ""):
            self._link = ["", attrs.get("href") or ""]
        elif tag == "img":
            self.images.append((attrs.get("alt"), (attrs.get("src") or "")[:60]))
            if self._link is not None:  # an image inside a link names the link by its alt
                self._link[0] += attrs.get("alt") or ""

    def handle_endtag(self, tag):
        if self._heading and tag == f"h{self._heading[0]}":
            self.headings.append((self._heading[0], " ".join(self._heading[1].split())))
            self._heading = None
        elif tag == "a" and self._link is not None:
            self.links.append((" ".join(self._link[0].split()), self._link[1]))
            self._link = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading[1] += data
        if self._link is not None:
            self._link[0] += data


def read_markdown(sources: list[str]) -> _Reader:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    reader = _Reader()
    for source in sources:
        reader.feed(markdown2html_mistune(source))
        reader.close()
    return reader


def markdown_of(path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


def heading_problems(headings: list[tuple[int, str]]) -> list[str]:
    problems = []
    h1 = [text for level, text in headings if level == 1]
    if len(h1) != 1:
        problems.append(f"{len(h1)} h1 headings (want exactly one): {h1}")
    if headings and headings[0][0] != 1:
        problems.append(f"the first heading is h{headings[0][0]}, not h1: {headings[0][1]!r}")
    for (before, _), (level, text) in zip(headings, headings[1:]):
        if level > before + 1:
            problems.append(f"h{before} -> h{level} skips a level at {text!r}")
    return problems


def image_problems(images) -> list[str]:
    return [f"image {src}... has no alt text" for alt, src in images
            if alt is None or not alt.strip() or alt.strip().lower() in ("image", "picture", "figure")]


def link_problems(links) -> list[str]:
    problems = []
    for text, href in links:
        if not text:
            problems.append(f"a link to {href} has no text")
        elif text.lower().strip(" .:") in VAGUE_LINK_TEXT:
            problems.append(f"link text {text!r} (to {href}) does not say where it goes")
        elif BARE_URL.match(text):
            problems.append(f"link text is a bare URL: {text!r}")
    return problems


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=lambda p: p.stem)
def chapter(request):
    return request.param, read_markdown(markdown_of(request.param))


def test_there_are_chapters_to_check():
    assert len(NOTEBOOKS) >= 12, NOTEBOOKS


def test_headings_run_in_order(chapter):
    path, md = chapter
    assert md.headings, f"{path.name}: no headings"
    assert heading_problems(md.headings) == [], path.name


def test_every_image_has_alt_text(chapter):
    path, md = chapter
    assert image_problems(md.images) == [], path.name


def test_link_text_says_where_it_goes(chapter):
    path, md = chapter
    assert link_problems(md.links) == [], path.name


def test_the_checks_catch_what_they_forbid():
    """The checks above fail on the mistakes they look for."""
    md = read_markdown(["## Not a title first\n\n# Title\n\n# Second title\n\n#### Skipped a level",
                        "![](plot.png) ![figure](b.png) <img src='c.png' alt='Weights of query 1'>",
                        "Read [here](a.html), [this](b.html), <https://example.org>, [](c.html), "
                        "[chapter 4, scaling](04_scaling_and_saturation.html).\n\n"
                        "```\n# a comment in code is not a heading\n```"])
    assert [level for level, _ in md.headings] == [2, 1, 1, 4]
    assert len(heading_problems(md.headings)) == 3  # two h1s, h2 first, h1 -> h4
    assert len(image_problems(md.images)) == 2 and len(md.images) == 3
    assert len(link_problems(md.links)) == 4 and len(md.links) == 5
