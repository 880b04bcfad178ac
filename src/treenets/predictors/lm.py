"""A trained language model: score sentences, read its syntactic distances, induce trees (`Parse`,
`treenets.predictors.parse`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from treenets.config import registered_tasks
from treenets.core.errors import TreenetsError
from treenets.nn import precision
from treenets.predictors.base import (
    PredictionInput,
    Predictor,
    TreeInducer,
    checked_batch_size,
    describe,
    quoted,
    sentence_list,
)
from treenets.predictors.parse import Layer, Parse
from treenets.text import NORMALIZERS, Dropped, check_text, checked_text, get_normalizer, is_number

_DIGITS = re.compile(r"[0-9]+")

@dataclass
class SentenceScore:
    tokens: list[str]  # what the model read (normalised; characters for a character model)
    logprobs: list[float]  # natural log; one per token, then one for the closing boundary token
    unknown: list[str]  # tokens read as <unk>
    dropped: list[Dropped] = field(default_factory=list)  # what of the text it read no token from

    @property
    def total(self) -> float:
        return sum(self.logprobs)

    @property
    def predicted(self) -> int:
        """How many tokens its perplexity is per: each token and the closing boundary token."""
        return len(self.logprobs)

    @property
    def perplexity(self) -> float:
        return math.exp(-self.total / len(self.logprobs))


class LanguageModel(TreeInducer, Predictor):
    """A trained language model with its vocabulary (from `treenets.load(checkpoint)`).

    A sentence is a string or a list of tokens. A string is normalised into the words of the model's training
    text by the normaliser its config names (`normalizer`, `treenets.text`: for a PTB model, Penn Treebank
    tokens, lower case, numbers as `N`, no punctuation). Text already tokenised (a string with
    `pretokenized=True`, split on white space, or a list of words) keeps only the vocabulary's conventions:
    lower-cased if it holds no upper-case word, digit runs replaced by `N` if it holds `N` and no digits (the PTB
    rules). The words then become the tokens the network reads as its task
    declares (`Task.split_words`: the words themselves, or for a character-level model their characters with
    `_` between words), and trees are drawn over those tokens. Tokens outside the vocabulary are read as
    `<unk>` and reported (an error for a vocabulary without `<unk>`, e.g. the characters of a character-level
    model), as is what of a string it read nothing from (`dropped`: punctuation, symbols, invisible characters;
    `treenets.text.Normalizer.read`). `<unk>` and `<eos>` typed in a string are those tokens, as in Mikolov's
    PTB text. Each sentence is read between the boundary tokens its task trained the model with (`<eos>` on
    both sides for a stream language model, as the official ON-LSTM parsing code does; `<s>`, `</s>` for a
    sentence-level one, as PRPN's).
    """

    inputs = (PredictionInput("sentence", "a language model: a sentence to score"),)
    reads = "a language model reads --sentence only"
    splits = ("official", "before")  # the values `parse` takes for `split`
    scores_sentences: ClassVar[bool] = True  # whether `score` gives sentences' probabilities (a parser's: none)

    def __init__(self, net, vocab, config, device="cpu"):
        super().__init__(net, vocab, config, device)
        task = registered_tasks()[config.task]
        self.bos, self.eos = task.boundaries
        self.token_unit = task.token_unit  # "word", or e.g. "character": what the tokens and tree leaves are
        self._split_words = task.split_words
        # How it reads a sentence typed by a person: its data section's `normalizer` (a task without one: `none`).
        self.normalizer = get_normalizer(getattr(config.data, "normalizer", "none"))
        words = [w for w in vocab.words if w not in (self.eos, vocab.unk)]
        # PTB's number token `N` is upper-case and says nothing about the case of the text.
        self._lower = not any(char.isupper() for w in words for char in w.replace("N", ""))
        # Numbers as the vocabulary writes them: every digit run as `N` where no word has a digit (the treebank
        # words: `3.5` -> `N.N`); whole numbers as `N` where `N` is a word and no number is (Mikolov's PTB text,
        # which keeps `1950s` and `30-day`).
        self._digits = "N" in vocab and not any(_DIGITS.search(w) for w in words)
        self._numbers = "N" in vocab and not self._digits and not any(is_number(w) for w in words)

    # --- reading sentences -------------------------------------------------------------------------------
    def tokenize(self, sentence: str | list[str], pretokenized: bool = False) -> list[str]:
        """The tokens the network reads for a sentence: a string normalised (`self.normalizer`); a string with
        `pretokenized` split on white space, or a list of words, in the vocabulary's case and numbers; then split
        as the task declares."""
        if isinstance(sentence, str) and not pretokenized:
            return self._split_words(self.normalizer(sentence))
        if not isinstance(sentence, str | list | tuple) or not all(isinstance(w, str) for w in sentence):
            raise TypeError(f"a sentence is a string or a list of word strings, not {describe(sentence)}")
        words = sentence.split() if isinstance(sentence, str) else list(sentence)
        return self._split_words([word if word in self.vocab else self._conventional(word) for word in words])

    def _conventional(self, word: str) -> str:
        """A word outside the vocabulary written in its conventions: lower case, numbers as `N` (PTB)."""
        if self._lower:
            word = word.lower()
        if self._digits:
            return _DIGITS.sub("N", word)
        return "N" if self._numbers and is_number(word) else word

    def read(self, sentence: str | list[str], pretokenized: bool = False, where: str | None = None) -> list[str]:
        """`tokenize`, or an error saying why no token is left or the string is not text (undecodable bytes,
        control characters: `treenets.text.check_text`; invisible characters are dropped); its message starts
        with `where`, e.g. the file and line, when given."""
        return self._read(sentence, pretokenized, where)[0]

    def _read(self, sentence: str | list[str], pretokenized: bool = False,
              where: str | None = None) -> tuple[list[str], list[Dropped]]:
        """`read`, and what of a string was dropped (`treenets.text.Normalizer.read`; a list of words: nothing)."""
        dropped = []
        if isinstance(sentence, str):
            reading = (NORMALIZERS["none"] if pretokenized else self.normalizer).read(
                check_text(sentence, where or "sentence"))
            dropped = reading.dropped
            tokens = self.tokenize(reading.words) if pretokenized else self._split_words(reading.words)
        else:
            tokens = self.tokenize(sentence, pretokenized)
        if tokens:
            return tokens, dropped
        text = checked_text(sentence, "sentence") if isinstance(sentence, str) else " ".join(sentence)  # (visible)
        where = f"{where}: " if where else ""
        if not text.strip():
            raise TreenetsError(f"{where}empty sentence {quoted(text)}: expected at least one word")
        raise TreenetsError(f"{where}sentence {quoted(text)}: no word left after the {self.normalizer.name} "
                            f"normaliser ({self.normalizer.summary}); expected at least one word")

    def require_words(self, context: str) -> None:
        """A clear error, prefixed by `context`, unless the model's tokens are words: trees over other units
        (characters) cannot be scored against a treebank's trees over words."""
        if self.token_unit != "word":
            raise TreenetsError(f"{context}: a {self.token_unit}-level model ({self.config.task}) draws its trees "
                                f"over {self.token_unit}s, a treebank's are over words, so they cannot be scored "
                                "against each other (`treenets parse` shows its trees)")

    def _encode_batch(self, sentences: list, tokens: list[list[str]]):
        """Ids and unknown words of the tokens of each sentence (from `read`; the sentences for messages), and a
        right-padded `[T, B]` batch of `<bos> w_1 ... w_n <eos>` (padding at the end does not change earlier
        positions of a left-to-right model)."""
        rows = []
        for sentence, words in zip(sentences, tokens):
            try:
                ids, unknown = self.vocab.encode([self.bos] + words + [self.eos])
            except TreenetsError as exc:
                raise TreenetsError(f"sentence {quoted(sentence)}: {exc}") from None
            rows.append((ids, unknown))
        width = max(len(ids) for ids, _ in rows)
        batch = torch.full((width, len(rows)), self.vocab.index[self.eos], dtype=torch.long)
        for j, (ids, _) in enumerate(rows):
            batch[: len(ids), j] = torch.tensor(ids)
        return rows, batch.to(self.device)

    # --- scores --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def score(self, sentences: str | list, pretokenized: bool = False) -> SentenceScore | list[SentenceScore]:
        """Log-probabilities of each token and of the closing boundary token, each sentence read after the
        opening one, all in one batch.

        Args:
            sentences: one sentence as a string, or a list of sentences (strings or token lists).
            pretokenized: read strings split on white space, without the model's normaliser.

        Returns:
            a `SentenceScore` for a string, else a list of them.
        """
        if isinstance(sentences, str):
            return self.score([sentences], pretokenized)[0]
        sentences = sentence_list(sentences)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        tokens = [words for words, _ in readings]
        rows, batch = self._encode_batch(sentences, tokens)
        out = self.net(batch[:-1])
        logp = precision.log_softmax(self.net.decoder(out.output), dim=-1)
        token_logp = logp.gather(-1, batch[1:].unsqueeze(-1)).squeeze(-1).cpu()
        return [SentenceScore(words, token_logp[: len(ids) - 1, j].tolist(), unknown, dropped)
                for j, ((words, dropped), (ids, unknown)) in enumerate(zip(readings, rows))]

    def evaluate(self, sentences: list, batch_size: int = 64, pretokenized: bool = False):
        """The task's metric over sentences (strings or token lists), each read on its own as `score` reads it,
        in batches of `batch_size` sentences of similar length: perplexity (bits per character for a
        character-level model) of their tokens and closing boundary tokens."""
        metric = registered_tasks()[self.config.task].Metric()
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        lengths = [len(self.read(sentence, pretokenized)) for sentence in sentences]
        order = sorted(range(len(sentences)), key=lengths.__getitem__)
        for start in range(0, len(order), batch_size):
            scores = self.score([sentences[i] for i in order[start : start + batch_size]], pretokenized)
            metric.add(torch.tensor(-sum(score.total for score in scores), dtype=torch.float64),
                       sum(len(score.logprobs) for score in scores))
        return metric

    def predict(self, sentences: str | list, pretokenized: bool = False) -> SentenceScore | list[SentenceScore]:
        """What a language model predicts: the tokens' log-probabilities (`score`)."""
        return self.score(sentences, pretokenized)

    def _predict_inputs(self, pretokenized: bool = False, sentence: str | None = None) -> SentenceScore:
        if sentence is None:
            raise TreenetsError("predict: a language model needs --sentence (or use `treenets parse`)")
        self.read(sentence, pretokenized, "--sentence")  # nothing to read: an error naming the option
        return self.score(sentence, pretokenized)

    # --- syntactic distances and trees ----------------------------------------------------------------------
    @property
    def num_distance_rows(self) -> int:
        """Rows of syntactic distances the model gives (ON-LSTM: one per layer; PRPN: one; 0: none)."""
        return getattr(self.net, "num_distance_rows", 0)

    @property
    def induces_trees(self) -> bool:
        """Whether it induces trees over words (a model with distances whose tokens are words)."""
        return self.num_distance_rows > 0 and self.token_unit == "word"

    @property
    def default_layer(self) -> int:
        """The row parsed by default, 1-based (the papers' choice: ON-LSTM's second layer, PRPN's gate)."""
        self._require_distances()
        return self.net.default_distance_row

    def _require_distances(self) -> None:
        if not self.num_distance_rows:
            raise TreenetsError(f"{type(self.net).__name__} gives no syntactic distances: it scores sentences "
                                "but induces no trees")

    def layers(self, spec: Layer = "default", option: str = "layer") -> list[Layer]:
        """Rows named by `spec`: a 1-based number (int or digits), `"mean"`, `"default"`, or `"all"` (each row,
        then the mean when there are several); errors name `spec` as `option`."""
        self._require_distances()
        rows = self.num_distance_rows
        if spec == "all":
            return list(range(1, rows + 1)) + (["mean"] if rows > 1 else [])
        if spec in ("default", None):
            return [self.default_layer]
        if spec == "mean":
            return ["mean"]
        if (isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit())) and 1 <= int(spec) <= rows:
            return [int(spec)]
        raise TreenetsError(f"{option} {spec}: expected a layer number from 1 to {rows}, 'mean' or 'all'")

    @torch.no_grad()
    def distances(self, sentences: str | list, input_gate: bool = False, batch_size: int = 64,
                  pretokenized: bool = False):
        """Syntactic distances of every token: `[rows, n_tokens]` for a string, else a list of them (sentences
        as in `score`), computed in batches of similar length; the boundary positions are dropped.

        The distances are the ones the model parses with (ON-LSTM: `1 - mean(master forget gate)` per layer;
        PRPN: the parsing network's gate, one row); with `input_gate=True`, ON-LSTM's `mean(master input
        gate)` instead.
        """
        if isinstance(sentences, str):
            return self.distances([sentences], input_gate, batch_size, pretokenized)[0]
        self._require_distances()
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        tokens = [self.read(sentence, pretokenized) for sentence in sentences]
        return self._distances(sentences, tokens, input_gate, batch_size)

    def distances_of_words(self, words: list[list[str]], batch_size: int = 64) -> list[torch.Tensor]:
        """`distances` of sentences already written in the model's words (e.g. by `self.normalizer.aligned`),
        read as they are."""
        self._require_distances()
        batch_size = checked_batch_size(batch_size)
        for sentence in words:
            if not sentence:
                raise TreenetsError("empty sentence: expected at least one word")
        return self._distances(words, [self._split_words(sentence) for sentence in words], False, batch_size)

    @torch.no_grad()
    def _distances(self, sentences: list, tokens: list[list[str]], input_gate: bool,
                   batch_size: int) -> list[torch.Tensor]:
        """`distances` of sentences already read (`read`)."""
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        result = [None] * len(tokens)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            _, batch = self._encode_batch([sentences[i] for i in chunk], [tokens[i] for i in chunk])
            out = self.net(batch)
            values = getattr(out, "distance_input", None) if input_gate else out.distances
            if values is None:
                raise TreenetsError(f"{type(self.net).__name__} has no input-gate distances")
            values = values.cpu()
            for j, index in enumerate(chunk):
                result[index] = values[:, 1 : 1 + len(tokens[index]), j]
        return result

    def parse(self, sentences: str | list, layer: Layer | None = None, split: str = "official",
              batch_size: int = 64, pretokenized: bool = False) -> Parse | list[Parse]:
        """The trees the model induces (greedy top-down splits at the largest distance, as the official code).

        Args:
            sentences: one sentence as a string, or a list of sentences (strings or token lists), read in
                batches of `batch_size`.
            layer: the 1-based row of distances, `"mean"`, or None for `default_layer`.
            split: `"official"` or `"before"` (see `treenets.trees.tree_from_distances`).
            pretokenized: read strings split on white space, without the model's normaliser.

        Returns:
            a `Parse` for a string (`.words` what the model read, `.tree` an `nltk.Tree`, `.nested` the same as
            nested lists, `.distances`, `.at(layer)` the tree of another row), else a list of them.
        """
        if isinstance(sentences, str):
            return self.parse([sentences], layer, split, batch_size, pretokenized)[0]
        if split not in self.splits:
            raise TreenetsError(f"split {split!r}: expected {' or '.join(map(repr, self.splits))}")
        chosen = self.layers("default" if layer is None else layer)[0]  # (checks that it gives distances)
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        tokens = [words for words, _ in readings]
        return [Parse(words, distances, chosen, split, [w for w in words if w not in self.vocab], dropped)
                for (words, dropped), distances in zip(readings, self._distances(sentences, tokens, False,
                                                                                   batch_size))]


class TreeModel(LanguageModel):
    """A model that reads text as a language model does and gives one tree per sentence from something other than
    syntactic distances (`tree_source`: a grammar, span scores), found by one of its `decoders`: no distances, one
    layer (1)."""

    splits = ("official",)  # its trees are its own, not split from distances: no split rule to choose

    @property
    def induces_trees(self) -> bool:
        return True

    @property
    def num_distance_rows(self) -> int:
        return 0

    @property
    def default_layer(self) -> int:
        return 1

    def layers(self, spec: Layer = "default", option: str = "layer") -> list[Layer]:
        """[1]: one tree per sentence (`spec` default, 1 or all)."""
        if spec in ("default", "all", None, 1, "1"):
            return [1]
        raise TreenetsError(f"{option} {spec}: {self.config.model.name} has no layers of distances: its tree comes "
                            f"from {self.tree_source} (expected 1, the default)")

    def _require_distances(self) -> None:
        raise TreenetsError(f"{self.config.model.name} gives no syntactic distances: its trees come from "
                            f"{self.tree_source} (`parse`)")
