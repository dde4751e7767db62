"""Every relative link and anchor of the documentation resolves (README.md, docs/*.md, examples/*/README.md).

A link's file (or folder) must exist, relative to the page that links it; a ``#anchor`` must be the slug of a
heading of the target page under GitHub's rules: the heading's text as rendered (inline code and emphasis marks
and link targets dropped), lowercased, every character that is not a letter, a digit, ``-``, ``_`` or a space
removed, each space turned into ``-``; a slug met again gets ``-1``, ``-2``... Links in fenced code blocks and
inline code are not links. External links (``https:``, ``mailto:``...) are not fetched. Pure Python, no network.
"""

import glob
import os
import re
import unicodedata
from urllib.parse import unquote

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def doc_pages():
    found = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))),
             *sorted(glob.glob(os.path.join(ROOT, "examples", "*", "README.md")))]
    return [os.path.relpath(p, ROOT).replace(os.sep, "/") for p in found if os.path.isfile(p)]


def prose_lines(text):
    """The page's lines with fenced code blocks blanked out (line numbers kept)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def heading_text(raw):
    """A heading's text as GitHub renders it: links keep their text, code spans their content, emphasis goes."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", raw)
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.strip()


def slug(text):
    """GitHub's anchor for a heading's rendered text (github-slugger, without the duplicate counter)."""
    kept = []
    for ch in text.lower():
        if ch in "-_ " or ch.isalnum() or unicodedata.category(ch).startswith("M"):
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(text):
    """Every heading anchor of a markdown page, duplicates numbered as GitHub numbers them."""
    seen, out, lines = {}, set(), prose_lines(text)
    for i, line in enumerate(lines):
        m = ATX.match(line)
        if m:
            raw = m.group(2) or ""
        elif (i > 0 and SETEXT.match(line) and lines[i - 1].strip() and not ATX.match(lines[i - 1])
              and not lines[i - 1].lstrip().startswith(("|", ">", "-", "*", "+"))):
            raw = lines[i - 1]
        else:
            continue
        base = slug(heading_text(raw))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(text):
    """(line number, destination) of every link and image of the page outside code."""
    found = []
    for number, line in enumerate(prose_lines(text), 1):
        bare = CODE_SPAN.sub(lambda m: m.group(1) + "x" * len(m.group(2)) + m.group(1), line)
        for m in INLINE_LINK.finditer(bare):
            found.append((number, m.group(2).strip("<>")))
        m = REFERENCE_DEF.match(bare)
        if m:
            found.append((number, m.group(1).strip("<>")))
    return found


def broken_links(page):
    """The links of ``page`` (a path relative to the repository) that do not resolve, as messages."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    problems = []
    for number, dest in links(text):
        if not dest or SCHEME.match(dest) or dest.startswith("//"):
            continue
        path, _, anchor = dest.partition("#")
        path, anchor = unquote(path), unquote(anchor)
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        full = os.path.join(ROOT, target)
        where = f"{page}:{number}: ({dest})"
        if path and not os.path.exists(full):
            problems.append(f"{where} {target} does not exist")
            continue
        if anchor and target.endswith(".md") and os.path.isfile(full):
            with open(full, encoding="utf-8") as f:
                if anchor not in anchors(f.read()):
                    problems.append(f"{where} no heading of {target} has the anchor #{anchor}")
    return problems


def test_slugs_follow_githubs_rules():
    page = "\n".join(["# Length scaling: `make bench-length`", "## Target-side syntax: target factors and interleaved tags",
                      "### `PRESET=sit-paper`: Sundararaman et al. (2019), Syntax-Infused Transformer",
                      "## Results", "```bash", "# 1. not a heading", "```", "## Results", "## Results ##",
                      "## Multi30k English→French, *3 seeds*", "Setext title", "---", "## [Linked](x.md) title"])
    assert anchors(page) == {"length-scaling-make-bench-length", "target-side-syntax-target-factors-and-interleaved-tags",
                             "presetsit-paper-sundararaman-et-al-2019-syntax-infused-transformer",
                             "results", "results-1", "results-2", "multi30k-englishfrench-3-seeds", "setext-title",
                             "linked-title"}


def test_links_are_found_outside_code_only():
    page = "\n".join(["See [a](a.md#x) and ![img](b.png \"title\") and `[no](c.md)`.", "```", "[no](d.md)", "```",
                      "[ref]: e.md", "[`code` text](f/g.md) [web](https://example.org)"])
    assert links(page) == [(1, "a.md#x"), (1, "b.png"), (5, "e.md"), (6, "f/g.md"), (6, "https://example.org")]


def test_the_pages_are_found_and_hold_links():
    pages = doc_pages()
    assert "README.md" in pages and any(p.startswith("docs/") for p in pages)
    assert sum(len(links(open(os.path.join(ROOT, p), encoding="utf-8").read())) for p in pages) > 20


@pytest.mark.parametrize("page", doc_pages())
def test_every_relative_link_and_anchor_resolves(page):
    problems = broken_links(page)
    assert not problems, "\n".join(problems)
