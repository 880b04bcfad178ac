"""Where a Tree-LSTM's trees come from when the text has none: trees a language model induces, or a fixed shape.

A Tree-LSTM reads a sentence over a binary constituency tree. SST and SICK come with trees (`gold`); a sentence
a user types does not, and "do induced trees help a Tree-LSTM?" (Williams et al., 2018) asks for the same model
over other trees. A tree source gives a binary tree over a sentence's tokens (a `ParentTree`, words first):

- `induced`: the tree a tree-inducing language model (ON-LSTM, PRPN; any of `treenets models` that gives
  syntactic distances) induces, greedy top-down at the largest distance as `treenets parse` draws it. The
  language model reads the tokens through its own normaliser (`Normalizer.aligned`: a PTB model reads `The`
  as `the`, `3.5` as `N` and drops punctuation); the tokens it drops join a neighbouring word
  (`treenets.trees.build.attach_dropped`).
- `right-branching`, `balanced`: the trees of the parsing baselines, which know nothing of the sentence.

Inducing trees for a corpus takes minutes on a CPU (about 20 ms a sentence with one thread for the shipped
ON-LSTM), so the trees of a corpus are kept in the cache (`$TREENETS_CACHE/trees`, named by a hash of the
parser's weights, its layer and the sentences) and read from there by the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from functools import cache

from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.predictors.base import PredictionInput
from treenets.text import NORMALIZERS, Dropped, check_text, checked_text, get_normalizer
from treenets.trees.build import attach_dropped, balanced, right_branching, tree_from_distances
from treenets.trees.parents import ParentTree, check_parents, from_nested, to_nested

SHAPES = {"right-branching": right_branching, "balanced": balanced}
# Of the way a parser reads tokens (its normaliser's words: 3 keeps every currency symbol and `<unk>`, `<eos>`)
# and attaches those it drops (`attach_dropped`): part of the cache's key.
TREES_VERSION = 3
DEFAULT_PARSER = "onlstm-ptb-small"  # the shipped parser that reads text best (README: parsing results)
PARSER = PredictionInput("parser", "Tree-LSTMs: the language model that induces the tree of a sentence (a zoo name, "
                         "model folder or checkpoint that gives syntactic distances; default: the model's "
                         f"data.parser, {DEFAULT_PARSER})", metavar="LM")  # the input of `tree_for`'s `parser`


class ShapeTrees:
    """The same shape for every sentence (`SHAPES`)."""

    def __init__(self, shape: str):
        if shape not in SHAPES:
            raise TreenetsError(f"tree shape {shape!r}: expected one of {', '.join(SHAPES)}")
        self.name, self._build = shape, SHAPES[shape]

    def trees(self, sentences: list[list[str]], progress=None) -> list[ParentTree]:
        """A tree over each sentence's tokens (every sentence at least one token)."""
        return [from_nested(self._build(list(range(len(tokens)))), tokens) for tokens in _checked(sentences)]


class InducedTrees:
    """The trees a language model induces over a sentence's tokens.

    Args:
        parser: a model name (`treenets models`), a model folder or a checkpoint of a language model that gives
            syntactic distances, over words (not characters).
        layer: its row of distances (1-based; None: the model's default, e.g. the ON-LSTM's second layer).
        device: where it runs.
        batch_size: sentences per forward pass.
    """

    def __init__(self, parser: str, layer: int | None = None, device="cpu", batch_size: int = 64):
        from treenets.predictors.lm import LanguageModel

        try:
            self.lm = LanguageModel.load(parser, device=device)
            self.lm.require_words("it")
            self.layer = self.lm.layers("default" if layer is None else layer)[0]
        except TreenetsError as exc:
            raise TreenetsError(f"parser {parser}: {exc}") from None
        self.name, self.batch_size = str(parser), batch_size

    def trees(self, sentences: list[list[str]], progress=None) -> list[ParentTree]:
        """A tree over each sentence's tokens; an error for a sentence in which the parser finds no word."""
        sentences = _checked(sentences)
        aligned = [self.lm.normalizer.aligned(tokens) for tokens in sentences]
        kept = [[i for i, word in enumerate(words) if word is not None] for words in aligned]
        for tokens, positions in zip(sentences, kept):
            if not positions:
                raise TreenetsError(f"sentence {' '.join(tokens)[:60]!r}: the parser {self.name} finds no word in it "
                                    f"(its {self.lm.normalizer.name} normaliser drops every token)")
        words = [[aligned_words[i] for i in positions] for aligned_words, positions in zip(aligned, kept)]
        result = []
        for start in range(0, len(words), 1024):  # in slices, to report progress
            chunk = slice(start, start + 1024)
            distances = self.lm.distances_of_words(words[chunk], batch_size=self.batch_size)
            for tokens, positions, rows in zip(sentences[chunk], kept[chunk], distances):
                row = rows.mean(0) if self.layer == "mean" else rows[int(self.layer) - 1]
                tree = tree_from_distances(positions, row.tolist())
                result.append(from_nested(attach_dropped(tree, positions, tokens), tokens))
            if progress is not None:
                progress(len(distances))
        return result

    def key(self) -> str:
        """What the trees depend on: the parser's weights and vocabulary, its layer and normaliser."""
        digest = hashlib.sha256()
        for name, tensor in sorted(self.lm.net.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().float().cpu().numpy().tobytes())
        digest.update("\n".join(self.lm.vocab.words).encode())
        digest.update(f"{self.layer} {self.lm.normalizer.name}".encode())
        return digest.hexdigest()


def _binary_tree_over(parents, tokens: list[str]) -> bool:
    """Whether a row of a cached file is a binary constituency tree over `tokens`, words first, in their order
    (else the file is parsed again); raises for rows that are not even lists of parents."""
    if len(parents) != 2 * len(tokens) - 1 or not all(isinstance(p, int) for p in parents):
        return False
    check_parents(list(parents), "cached trees")
    tree = ParentTree(tuple(parents), tuple(tokens))
    if any(tree.children[word] for word in range(len(tokens))):
        return False
    return from_nested(to_nested(tree), tokens).parents == tree.parents


def _checked(sentences: list[list[str]]) -> list[list[str]]:
    for tokens in sentences:
        if not tokens:
            raise TreenetsError("empty sentence: a tree needs at least one token")
    return sentences


@cache
def tree_source(kind: str, parser: str | None = None, device="cpu"):
    """The tree source `kind` (`induced` with `parser`, or a shape of `SHAPES`), loaded once per process."""
    if kind == "induced":
        return InducedTrees(parser or DEFAULT_PARSER, device=device)
    return ShapeTrees(kind)


def sentence_tokens(config, text: str, pretokenized: bool, where: str) -> tuple[list[str], list[Dropped]]:
    """The tokens a Tree-LSTM (or its sequential baseline) reads for a typed sentence: normalised by its config's
    `data.normalizer` (older models: `tokens`, the Penn Treebank tokens SST and SICK are written in), or split on
    white space when `pretokenized`; and what of the text it read no token from (`Normalizer.read`); an error
    naming `where` when no token is left."""
    normalizer = NORMALIZERS["none"] if pretokenized else get_normalizer(getattr(config.data, "normalizer", "tokens"))
    reading = normalizer.read(check_text(text, where))
    if not reading.words:
        raise TreenetsError(f"{where}: empty sentence {checked_text(text, where)[:60]!r}: expected at least one word")
    return reading.words, reading.dropped


def tree_for(config, tokens: list[str], parser: str | None = None, device="cpu") -> tuple[ParentTree, str]:
    """A binary tree over a typed sentence's tokens for a Tree-LSTM of `config`, and where it came from: from
    the language model `parser` if given, else as the model was trained (a shape for a model trained on one,
    otherwise induced by its `data.parser`, `onlstm-ptb-small` for older models)."""
    kind = getattr(config.data, "trees", "gold")
    if parser is None and kind in SHAPES:
        source = tree_source(kind)
    else:
        source = tree_source("induced", parser or getattr(config.data, "parser", DEFAULT_PARSER), device)
    return source.trees([tokens])[0], source.name


def cached_trees(source, sentences: list[list[str]], what: str, log=note) -> list[ParentTree]:
    """`source.trees(sentences)`, from the cache when these sentences were parsed by the same parser before
    (shapes are built, not cached); `what` names the sentences for the log."""
    if isinstance(source, ShapeTrees):
        return source.trees(sentences)
    from treenets.core.folders import cache_dir

    digest = hashlib.sha256(f"{TREES_VERSION} {source.key()}".encode())
    for tokens in sentences:
        digest.update((json.dumps(tokens) + "\n").encode())
    path = cache_dir() / "trees" / f"{digest.hexdigest()[:32]}.json"
    if path.is_file():
        try:
            parents = json.loads(path.read_text())
            if len(parents) == len(sentences):
                trees = [ParentTree(tuple(p), tuple(tokens)) for p, tokens in zip(parents, sentences)
                         if _binary_tree_over(p, tokens)]
                if len(trees) == len(sentences):
                    return trees
        except (OSError, ValueError, TypeError, IndexError, TreenetsError):
            pass  # a damaged cache file: parse again and replace it
    start = time.monotonic()
    trees = source.trees(sentences)
    log(f"induced trees: {len(sentences):,} sentences of {what} parsed by {source.name} in "
        f"{time.monotonic() - start:.0f} s (kept in {path})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump([list(tree.parents) for tree in trees], fh)
        os.replace(tmp, path)
    except OSError as exc:
        log(f"induced trees: could not keep them in {path} ({exc.strerror}); they will be parsed again next time")
    return trees

