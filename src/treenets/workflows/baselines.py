"""The baseline trees scored against a treebank (`treenets baselines`: `print_baselines`): left- and
right-branching, balanced and random."""

from __future__ import annotations

from treenets.data.treebanks import GoldTreebank
from treenets.trees.evaluation import (
    evaluate_baselines,
    format_table,
)


def print_baselines(treebank: GoldTreebank, random_draws: int = 5, root=None,
                    conventions: list[str] = ("official",)) -> None:
    """`treenets baselines`: the right- and left-branching, balanced and random trees (`random_draws` averaged)
    scored against `treebank` under `conventions`, as `evaluate_parsing` scores a model's."""
    path, sentences = treebank.read(root)
    rows = [(name, "", summary) for name, summary in
            evaluate_baselines(sentences, random_draws, conventions=list(conventions)).items()]
    print(f"treebank: {treebank.where(path)}: {rows[0][2]['n']} sentences scored, {rows[0][2]['empty']} empty after "
          f"filtering; {treebank.describe_words()}")
    print(format_table(rows, conventions))
