"""Trees: treebank reading and preprocessing, trees from syntactic distances, and parsing scores."""

from treenets.trees.build import (
    balanced,
    left_branching,
    random_tree,
    right_branching,
    tree_from_distances,
    without,
)
from treenets.trees.metrics import ParseScores, average_depth, self_f1, sentence_prf, spans
from treenets.trees.ptb import (
    WORD_TAGS,
    collapse,
    labeled_spans,
    normalize_word,
    parse_trees,
    read_treebank,
    tree_words,
)

__all__ = [
    "WORD_TAGS", "ParseScores", "average_depth", "balanced", "collapse", "labeled_spans", "left_branching",
    "normalize_word", "parse_trees", "random_tree", "read_treebank", "right_branching", "self_f1",
    "sentence_prf", "spans", "tree_from_distances", "tree_words", "without",
]
