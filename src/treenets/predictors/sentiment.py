"""A trained sentiment classifier: the class of a sentence and, for Tree-LSTMs, of every phrase."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.errors import TreenetsError
from treenets.predictors.base import Predictor
from treenets.predictors.relatedness import chain
from treenets.trees.parents import ParentTree, parse_bracketed


@dataclass
class Sentiment:
    label: int  # the sentence's class
    probabilities: list[float]  # per class
    unknown: list[str]  # words read as <unk>
    phrases: list[tuple[str, int]] | None = None  # (words, class) of every phrase of a tree; None for LSTMs


def node_spans(tree: ParentTree) -> dict[int, tuple[int, int]]:
    """Word span of every node of a constituency tree (words are nodes 0..w-1)."""
    spans: dict[int, tuple[int, int]] = {}
    stack = [(tree.root, False)]  # an explicit stack: a tree may be deeper than Python's recursion limit
    while stack:
        node, children_done = stack.pop()
        children = tree.children[node]
        if not children:
            spans[node] = (node, node + 1)
        elif children_done:
            spans[node] = (spans[children[0]][0], spans[children[-1]][1])
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return spans


class SentimentClassifier(Predictor):
    """A trained sentiment model with its vocabulary (from `treenets.load`): classifies sentences and phrases."""

    @torch.no_grad()
    def predict(self, text: str) -> Sentiment:
        """Classify a sentence: for Tree-LSTMs a bracketed binary tree (`(3 (2 It) (4 works))`; labels are
        ignored and may be any token), for LSTMs a plain sentence."""
        if self.net.sequential:
            words = text.split()
            if not words:
                raise TreenetsError("empty sentence")
            tree = chain(words)
        else:
            tree = parse_bracketed(text, "tree", require_labels=False)
        ids, unknown = self.vocab.encode(tree.words)
        log_probs, batch = self.net([tree], [torch.tensor(ids)])
        root = 0 if batch is None else int(batch.roots[0])
        result = Sentiment(int(log_probs[root].argmax()), [round(p, 6) for p in log_probs[root].exp().tolist()],
                           unknown)
        if batch is not None:
            spans = sorted(node_spans(tree).items(), key=lambda x: (x[1][0], -x[1][1]))
            result.phrases = [(" ".join(tree.words[s:e]), int(log_probs[node].argmax())) for node, (s, e) in spans]
        return result

    def predict_command(self, args) -> Sentiment:
        text = args.tree or args.sentence
        if not text:
            raise TreenetsError("predict: a sentiment model needs --tree (Tree-LSTM) or --sentence (LSTM)")
        return self.predict(text)
