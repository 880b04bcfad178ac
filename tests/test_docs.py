"""The README and the docs beside it: every relative link reaches a file, and every `#anchor` a heading of it
(GitHub's slugs), so that moving a section never leaves a dead link."""

from __future__ import annotations

import json
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


def _zoo_rows() -> dict[str, list[str]]:
    """The README's table of shipped models: name -> its cells (size, trained here, figures)."""
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        found = re.match(r"\| \[`([\w-]+)`\]\(models/\1/README\.md\) \|", line)
        if found:
            rows[found[1]] = [cell.strip() for cell in line.strip("|").split("|")[2:]]
    return rows


def test_the_readme_lists_every_shipped_model_with_its_cards_figures():
    """The README's table of shipped models is written by hand: each row must say what the zoo registry (written
    from the cards, `metrics.json`, measured on the shipped files by `treenets export --measure`) and the card's
    training record say, as `treenets models` words them (the README leaves out F1's layer), so that a model
    exported again cannot leave the front page with the old figures."""
    from treenets.zoo import registry as zoo

    rows = _zoo_rows()
    assert sorted(rows) == sorted(zoo.registry())
    stale = []
    for name, (size, trained, figures, *_) in rows.items():
        model = zoo.registry()[name]
        training = json.loads((ROOT / "models" / name / "metrics.json").read_text()).get("training")
        # (an ensemble trains nothing: its members were)
        trained_text = f"{training['minutes']:.1f} min, {training['steps']:,} steps" if training else "none"
        expected = [f"{model.size_mb} MB", trained_text]
        expected += [re.sub(r" \(layer \d+\)", "", figure) for figure in model.figures]
        stale += [f"{name}: {text!r}" for text in expected if text not in " | ".join([size, trained, figures])]
    assert not stale, f"README.md's models table differs from the cards: {stale}"


def test_the_logic_tables_give_the_shipped_models_figures():
    """The tables of logical inference by number of operators (README, docs/experiments.md) name a shipped model
    per row: each cell must be its card's test accuracy at that many operators (two decimals), the mean over 7 to
    12+, the whole test set's (`all`) or the validation accuracy (`valid`)."""
    operators = [str(n) for n in range(12)] + ["12+"]
    checked, wrong = 0, []
    for page in (ROOT / "README.md", ROOT / "docs" / "experiments.md"):
        header = None
        for line in page.read_text().splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
            if cells and cells[1:] and cells[1] in ("0", "7"):
                header = cells
            found = re.search(r"`(\w+-logic)`", cells[0]) if cells and header else None
            if not found:
                header = header if cells else None
                continue
            card = json.loads((ROOT / "models" / found[1] / "metrics.json").read_text())["splits"]
            test = card["test"]
            figures = {n: test[f"accuracy_ops_{n}"] for n in operators}
            figures["mean 7-12+"] = sum(figures[n] for n in operators[7:]) / 6
            figures.update({"all": test["accuracy"], "valid": card["valid"]["accuracy"]})
            for column, cell in zip(header[1:], cells[1:], strict=True):
                checked += 1
                if cell != f"{figures[column]:.2f}":
                    wrong.append(f"{page.name} {found[1]} column {column}: {cell}, the card {figures[column]:.4f}")
    assert checked >= 3 * 7 + 3 * 16 and not wrong, wrong


def test_one_version_in_the_package_its_build_the_command_and_the_changelog(capsys):
    """treenets/core/version.py is the one place the version is written: setuptools reads it for the wheel
    (pyproject.toml's dynamic version, expanded here as a build expands it), `treenets --version` prints it, and
    the CHANGELOG's top entry names it (`0.11` is 0.11.0). Before, the wheel said 0.1.0 at CHANGELOG 0.11."""
    from setuptools.config.pyprojecttoml import read_configuration

    from treenets import __version__
    from treenets.cli import main

    built = read_configuration(ROOT / "pyproject.toml", expand=True)["project"]["version"]
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out.split()
    top = re.match(r"(\d+(?:\.\d+)*) ", (ROOT / "CHANGELOG.md").read_text().split("\n\n")[1])
    assert top, "the CHANGELOG's top entry starts with its version, e.g. `0.11 (work in progress):`"
    changelog = ".".join((top[1].split(".") + ["0", "0"])[:3])
    assert built == printed[1] == __version__ == changelog and printed[0] == "treenets"


def test_the_shipped_parsers_config_trains_it_as_its_card_and_the_docs_say():
    """`configs/onlstm-ptb-small.yaml` is the config of the shipped model (its folder's config.json: the same
    values, the training's length and threads included), and the README and docs/training.md give its steps,
    threads and minutes as its card does. Before, the README said "122 min, 1 thread" of a config with
    `max_minutes: 60`, `threads: 2`."""
    from treenets.config import load_config, to_dict

    folder = ROOT / "models" / "onlstm-ptb-small"
    shipped = json.loads((folder / "config.json").read_text())
    training = json.loads((folder / "metrics.json").read_text())["training"]
    config = to_dict(load_config(ROOT / "configs" / "onlstm-ptb-small.yaml"))
    # (keys added since the export, e.g. train.patience, are not in the folder's config)
    assert {section: {key: config[section][key] for key in values} if isinstance(values, dict) else config[section]
            for section, values in shipped.items()} == shipped
    assert shipped["train"]["max_steps"] == training["steps"] and shipped["train"]["max_minutes"] is None
    for page in (ROOT / "README.md", ROOT / "docs" / "training.md"):
        lines = [line for line in page.read_text().splitlines()
                 if line.startswith("treenets train configs/onlstm-ptb-small.yaml ") and "# the shipped" in line]
        assert len(lines) == 1, page
        said = re.search(r"([\d,]+) steps, (\d+) threads?, ([\d.]+) min", lines[0])
        assert said and (int(said[1].replace(",", "")), int(said[2]), float(said[3])) == (
            training["steps"], shipped["train"]["threads"], round(training["minutes"])), (page.name, lines[0])


def test_the_layout_table_names_every_module():
    """docs/development.md's layout: every module of the package is named in the row of its folder (a model
    folder's modules by the folder, `onlstm/`; a command's file by its command, the commands' row describing them
    as one file each; a folder's `__init__.py` by the row itself), so that no module hides from a reader."""
    from treenets.commands import all_commands

    rows = {}
    for line in (ROOT / "docs" / "development.md").read_text().splitlines():
        found = re.match(r"\| `src/treenets/([\w/]*)` \|", line)
        if found:
            rows[found[1]] = line
    package = ROOT / "src" / "treenets"
    commands = {name.replace("-", "_") for name in all_commands()}
    unnamed = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if path.name == "__init__.py" or (parts[0] == "commands" and path.stem in commands):
            continue
        row = rows.get(f"{parts[0]}/" if len(parts) > 1 else "", "")
        if (f"`{parts[1]}/`" if len(parts) > 2 else f"`{path.name}`") not in row:
            unnamed.append("/".join(parts))
    assert unnamed == [], f"docs/development.md's layout names none of {unnamed}"
