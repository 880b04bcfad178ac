"""A trained span parser (`treenets distill`'s student, the `parsing` task): its binary trees of sentences, by
Viterbi (the highest-scoring tree of its tree CRF: a CKY over the span scores) or by minimum Bayes risk (the tree of
the largest summed span marginals). A sentence is read as `LanguageModel` reads one (normalised into the words of
its training trees; a word outside its vocabulary is read by its characters)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from treenets.core.errors import TreenetsError
from treenets.nn.chart import tree_crf_marginals
from treenets.predictors.base import checked_batch_size, sentence_list
from treenets.predictors.lm import TreeModel
from treenets.predictors.parse import Layer, Parse
from treenets.trees.ensemble import best_binary_trees, nested_from_spans

DECODERS = ("viterbi", "mbr")
BATCH_FLOATS = 1 << 24  # the network's largest layer over a batch holds at most this many floats (64 MB)


def binary_spans(tree) -> list[tuple[int, int]]:
    """The spans (start, end inclusive) of two words or more of a tree (nested lists), made binary where a node has
    more than two children (grouped from the right: (a b c) -> (a (b c))), the whole sentence's included."""
    found = []

    def walk(node, start: int) -> int:  # returns the end (exclusive)
        if not isinstance(node, list):
            return start + 1
        children = list(node)
        if len(children) == 1:
            return walk(children[0], start)
        end = walk(children[0], start)
        end = walk(children[1:] if len(children) > 2 else children[1], end)  # more: the rest grouped on the right
        found.append((start, end - 1))
        return end

    walk(tree, 0)
    return found


def decode_trees(scores: torch.Tensor, lengths: torch.Tensor, decode: str = "viterbi") -> list[list[tuple[int, int]]]:
    """Each sentence's tree as its spans (start, end inclusive) of two words or more: `viterbi` the tree of the
    largest summed span scores, `mbr` of the largest summed span marginals (`tree_crf_marginals`); a CKY each
    (`treenets.trees.ensemble.best_binary_trees`, the sentences of one length together; ties: the shortest
    left child)."""
    if decode not in DECODERS:
        raise TreenetsError(f"decode {decode!r}: expected {' or '.join(map(repr, DECODERS))}")
    values = [int(n) for n in lengths.tolist()]
    if decode == "mbr" and max(values) >= 2:
        longer = [b for b, n in enumerate(values) if n >= 2]
        table = scores.new_zeros(scores.shape)
        table[longer] = tree_crf_marginals(scores[longer], lengths[longer])
    else:
        table = scores
    table = table.detach().cpu().double().numpy()
    found = [[] for _ in values]
    for n in sorted(set(values)):  # one CKY for the sentences of each length (`best_binary_trees`)
        same = [b for b, length in enumerate(values) if length == n]
        grids = np.zeros((len(same), n + 1, n + 1))
        grids[:, :n, 1:] = np.triu(table[same, :n, :n])  # [start, end exclusive]
        for b, (spans, _) in zip(same, best_binary_trees(grids, n)):
            found[b] = [(s, e - 1) for s, e in spans]
    return found


class TreeCRFParser(TreeModel):
    """A trained span parser with its vocabulary, from `treenets.load`: `parse` (binary trees, `decode` "viterbi" or
    "mbr"). It gives trees, not probabilities of sentences nor syntactic distances."""

    decoders = DECODERS
    scores_sentences = False
    tree_source = "its span scores"
    unknown_words = "read as <unk> and by their characters"

    def score(self, sentences, pretokenized: bool = False):
        raise TreenetsError(f"{self.config.model.name} is a parser: it gives trees, not the probability of a sentence "
                            "(`parse`)")

    def evaluate(self, sentences: list, batch_size: int = 64, pretokenized: bool = False):
        raise TreenetsError(f"{self.config.model.name} is a parser: `treenets eval --file` scores language models; "
                            "score its trees with `treenets parse-eval`")

    @torch.no_grad()
    def trees_of_tokens(self, tokens: list[list[str]], decode: str = "viterbi",
                        batch_size: int = 64) -> list[list[tuple[int, int]]]:
        """For sentences already read: each one's spans (start, end inclusive), in batches of one length (the
        network's LSTM runs them unpacked) of at most `batch_size`, fewer for long sentences (`BATCH_FLOATS`)."""
        self.net.eval()
        result = [[] for _ in tokens]
        by_length = {}
        for i in sorted(range(len(tokens)), key=lambda i: len(tokens[i])):
            if len(tokens[i]) >= 2:
                by_length.setdefault(len(tokens[i]), []).append(i)
        sizes = {n: max(1, min(batch_size, BATCH_FLOATS // self.net.floats_per_sentence(n))) for n in by_length}
        chunks = [same[start : start + sizes[n]] for n, same in by_length.items()
                  for start in range(0, len(same), sizes[n])]
        for chunk in chunks:
            words = [tokens[i] for i in chunk]
            ids = [torch.tensor(self.vocab.encode(w)[0]) for w in words]
            lengths = torch.tensor([len(w) for w in words])
            padded = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True)
            scores = self.net(padded.to(self.device), words, lengths)
            for i, found in zip(chunk, decode_trees(scores, lengths, decode)):
                result[i] = found
        return result

    def parse(self, sentences: str | list, layer: Layer | None = None, split: str = "official",
              batch_size: int = 64, pretokenized: bool = False, decode: str = "viterbi"):
        """The parser's binary trees (`decode` "viterbi" or "mbr").

        Returns:
            a `Parse` for a string (`.words`, `.tree`, `.nested`), else a list of them.
        """
        if isinstance(sentences, str):
            return self.parse([sentences], layer, split, batch_size, pretokenized, decode)[0]
        if split not in self.splits:
            raise TreenetsError(f"split {split!r}: a span parser's trees are its own (no split rule applies)")
        self.layers("default" if layer is None else layer)
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        found = self.trees_of_tokens([words for words, _ in readings], decode, batch_size)
        return [SpanParse(words, torch.zeros(0, len(words)), 1, "official", [w for w in words if w not in self.vocab],
                          dropped, spans=list(spans))
                for (words, dropped), spans in zip(readings, found)]


@dataclass
class SpanParse(Parse):
    """A span parser's tree of one sentence: `spans` (start, end inclusive) of two words or more; `distances` has
    no row, `layer` 1."""

    spans: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self):
        self.nested = nested_from_spans(self.words, [(s, t + 1) for s, t in self.spans])  # (ends exclusive)

    def at(self, layer: Layer) -> SpanParse:
        """The one tree there is."""
        return self


__all__ = ["DECODERS", "SpanParse", "TreeCRFParser", "binary_spans", "decode_trees"]
