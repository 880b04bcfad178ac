"""A trained sentiment classifier: the class of a sentence and, for Tree-LSTMs, of every phrase; for an Ordered
Memory encoder, the tree it induces of a sentence (`treenets parse`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.core.errors import TreenetsError
from treenets.data.sst import CLASS_NAMES
from treenets.nn.registry import InducedTrees
from treenets.predictors.base import PredictionInput, Predictor
from treenets.predictors.induced import InducedTreeParser
from treenets.predictors.relatedness import chain
from treenets.predictors.tree_sources import PARSER, sentence_tokens, tree_for
from treenets.text import Dropped, checked_text
from treenets.trees.parents import ParentTree, node_spans, parse_bracketed


@dataclass
class Sentiment:
    label: int  # the sentence's class
    name: str  # its name, e.g. "positive"
    probabilities: list[float]  # per class
    classes: list[str]  # the names of the classes in order: very negative ... very positive, or negative, positive
    unknown: list[str]  # words read as <unk>
    phrases: list[tuple[str, int, str]] | None = None  # (words, class, its name) of every phrase of a tree; None
    # for LSTMs
    tokens: list[str] | None = None  # what the model read
    tree: str | None = None  # Tree-LSTMs: the tree read, each node labelled with its predicted class
    spans: list[tuple[int, int, int]] | None = None  # Tree-LSTMs: (start, end, class) of every node, pre-order
    parser: str | None = None  # where the tree came from: a language model, a shape, or "given"
    dropped: list[Dropped] | None = None  # what of the sentence it read no token from (a tree given: None)


BRACKETS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})


def labelled_tree(tree: ParentTree, labels: list[int]) -> str:
    """`tree` in SST's bracketed form, `(3 (2 It) (4 works))`, with a label per node (brackets among the words
    written `-LRB-`, `-RRB-`, as SST writes them, so that the text reads back as the same tree)."""
    text: dict[int, str] = {}
    for node in sorted(range(tree.size), key=lambda n: tree.height[n]):  # children before their parents
        inside = " ".join(text.pop(child) for child in tree.children[node]) if tree.children[node] else \
            tree.words[node].translate(BRACKETS)
        text[node] = f"({labels[node]} {inside})"
    return text[tree.root]


class SentimentClassifier(InducedTreeParser, Predictor):
    """A trained sentiment model with its vocabulary (from `treenets.load`): classifies sentences and phrases; with
    an Ordered Memory encoder, `parse` gives the trees it induces of sentences (`treenets.predictors.induced`), over
    the tokens `predict` reads (a sentence as typed has no tree of its own to show beside it)."""

    inputs = (PredictionInput("sentence", "sentiment: a sentence as typed (a Tree-LSTM reads it over the tree --parser "
                              "induces)"),
              PredictionInput("tree", "sentiment with a Tree-LSTM, instead of --sentence: a bracketed binary tree of "
                              "tokens, e.g. '(X (X It) (X works))' (labels are ignored)"),
              PARSER)
    reads = "a sentiment model reads --sentence (or --tree)"

    @torch.no_grad()
    def predict(self, sentence: str | None = None, tree: str | None = None, parser: str | None = None,
                pretokenized: bool = False) -> Sentiment:
        """Classify a sentence, and with a Tree-LSTM each of its phrases.

        Args:
            sentence: the sentence as typed (`"It is a moving film."`), normalised into SST's tokens (Penn
                Treebank tokens; see `treenets.text`). A Tree-LSTM reads it over the tree a language model
                induces (its config's `data.parser`, the shipped ON-LSTM by default) or the shape it was trained
                on.
            tree: instead of `sentence`, for a Tree-LSTM: a bracketed binary tree of tokens (`(3 (2 It) (4 works))`;
                labels are ignored and may be any token).
            parser: the language model that induces the tree (a name of `treenets models`, a model folder or a
                checkpoint), instead of the model's own.
            pretokenized: `sentence` is tokenised already: split it on white space.
        """
        if (sentence is None) == (tree is None):
            raise TreenetsError("predict: give a sentence or (for a Tree-LSTM) a bracketed tree, not both")
        source, dropped = "given", None
        if tree is not None:
            if self.net.sequential:
                raise TreenetsError("predict: an LSTM reads a sentence, not a tree")
            parsed = parse_bracketed(checked_text(tree, "tree"), "tree", require_labels=False)
        else:
            tokens, dropped = sentence_tokens(self.config, sentence, pretokenized, "sentence")
            if self.net.sequential:
                parsed, source = chain(tokens), None
            else:
                parsed, source = tree_for(self.config, tokens, parser, self.device)
        ids, unknown = self.vocab.encode(parsed.words)
        log_probs, batch = self.net([parsed], [torch.tensor(ids)])
        root = 0 if batch is None else int(batch.roots[0])
        names = CLASS_NAMES[self.config.data.classes]
        label = int(log_probs[root].argmax())
        result = Sentiment(label, names[label], [round(p, 6) for p in log_probs[root].exp().tolist()], list(names),
                           unknown, tokens=list(parsed.words), parser=source, dropped=dropped)
        if batch is not None:
            labels = log_probs.argmax(-1).tolist()
            spans = sorted(node_spans(parsed).items(), key=lambda x: (x[1][0], -x[1][1]))
            result.phrases = [(" ".join(parsed.words[s:e]), labels[node], names[labels[node]])
                              for node, (s, e) in spans]
            result.spans = [(s, e, labels[node]) for node, (s, e) in spans]
            result.tree = labelled_tree(parsed, labels)
        return result

    def _predict_inputs(self, pretokenized: bool = False, sentence: str | None = None, tree: str | None = None,
                        parser: str | None = None) -> Sentiment:
        if tree is None and sentence is None:
            raise TreenetsError("predict: a sentiment model needs --sentence (or, for a Tree-LSTM, --tree)")
        if tree is not None and sentence is not None:
            raise TreenetsError("predict: give --sentence or --tree, not both")
        return self.predict(sentence, tree, parser, pretokenized)

    def _read_input(self, text: str, where: str | None, pretokenized: bool) -> tuple[list[str], None]:
        return sentence_tokens(self.config, text, pretokenized, where or f"sentence {text!r:.60}")[0], None

    def _induce(self, tokens: list[list[str]]) -> InducedTrees:
        return self.net.forward_inducing([torch.tensor(self.vocab.encode(t)[0]) for t in tokens])[1]

    def _no_trees(self) -> str | None:
        if self.net.induces_trees:
            return None
        return (f"this sentiment model's encoder ({self.config.model.name}) induces no trees: only Ordered Memory "
                "(ordered-memory) does (a Tree-LSTM reads the trees a parser gives it: `treenets predict "
                "--sentence` shows them)")
