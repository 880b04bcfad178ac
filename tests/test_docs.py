"""The README and the docs beside it: every relative link reaches a file, and every `#anchor` a heading of it
(GitHub's slugs), so that moving a section never leaves a dead link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    inside_code = False
    found = set()
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            inside_code = not inside_code
        elif not inside_code and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def test_the_docs_are_there():
    assert {p.name for p in PAGES} >= {"README.md", "CHANGELOG.md", "training.md", "parsing.md", "experiments.md",
                                       "speed.md", "reliability.md", "data.md", "development.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert broken == []


def test_the_readme_is_a_front_page():
    words = len((ROOT / "README.md").read_text().split())
    assert words <= 2_200, f"README.md has {words} words: detail belongs in docs/"
    assert (ROOT / "README.md").read_text().split("## Quick start")[1].split("```")[1].split() == ["make", "demo",
                                                                                                 "make", "test"]
