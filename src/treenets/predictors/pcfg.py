"""A trained probabilistic context-free grammar (the Neural and Compound PCFGs): its labelled trees of sentences,
by Viterbi (the most probable tree: each span's nonterminal and each word's preterminal) or by minimum Bayes risk
over span marginals (the tree of the largest summed span probabilities, each span labelled by its most probable
nonterminal), the probability of sentences, and sentences drawn from the grammar with their trees (`sample`).

A sentence is read as `LanguageModel` reads one (normalised into the words of the training text, `<unk>` for the
others), without boundary tokens. A Compound PCFG parses with z at its posterior mean, as the official evaluation
does, and scores with the evidence lower bound (an upper bound on perplexity, as the paper reports it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from treenets.config import registered_tasks
from treenets.core.errors import TreenetsError
from treenets.nn.chart import decode_bytes, marginals, mbr, viterbi
from treenets.nn.sampling import sample_trees
from treenets.nn.utils import memory_bytes
from treenets.predictors.base import checked_batch_size, sentence_list
from treenets.predictors.lm import TreeModel
from treenets.predictors.parse import Layer, Parse
from treenets.text import Dropped
from treenets.trees.ensemble import nested_from_spans

DECODERS = ("viterbi", "mbr")
# The most memory one batch of parsing takes (`treenets.nn.chart.decode_bytes`, summed over the batch): a grammar of
# hundreds of nonterminals, or Kim's grammars' MBR of long sentences, parse in smaller batches.
BATCH_BYTES = 40 << 25  # 1.25 GiB: 2^25 cell-nonterminal entries at 40 bytes


def labelled_bracketing(words: list[str], spans, tags, nonterminal: str = "NT", preterminal: str = "T") -> str:
    """The labelled tree as one bracketed line: `(NT-3 (T-12 the) (T-5 cat))`."""
    labels = {(s, t): label for s, t, label in spans}

    def node(s: int, t: int) -> str:
        if s == t:
            return f"({preterminal}-{tags[s]} {words[s]})"
        for split in range(s, t):
            if (split == s or (s, split) in labels) and (split + 1 == t or (split + 1, t) in labels):
                return f"({nonterminal}-{labels[(s, t)]} {node(s, split)} {node(split + 1, t)})"
        raise ValueError("not a binary tree")

    if len(words) == 1:
        return f"({nonterminal} {node(0, 0)})"
    return node(0, len(words) - 1)


@dataclass
class GrammarScore:
    """A grammar's probability of a sentence: `logprob` is log p(sentence) summed over its trees (natural log; a
    Compound PCFG's, the evidence lower bound: `bound`), -inf for a one-word sentence (no tree has a nonterminal
    root over one word)."""

    tokens: list[str]  # what the grammar read (normalised)
    logprob: float
    unknown: list[str]  # tokens read as <unk>
    dropped: list[Dropped] = field(default_factory=list)  # what of the text it read no token from
    bound: bool = False  # a lower bound (the ELBO), not the exact value

    @property
    def total(self) -> float:
        return self.logprob

    @property
    def predicted(self) -> int:
        """What its perplexity is per: each word and the closing `</s>`, as Kim et al. count them."""
        return len(self.tokens) + 1

    @property
    def perplexity(self) -> float:
        return math.exp(-self.logprob / self.predicted)


@dataclass
class GrammarParse(Parse):
    """A grammar's tree of one sentence: `spans` (start, end inclusive, nonterminal) of its nodes over two or more
    words, the whole sentence's included, and `tags` each word's preterminal; `distances` has no row (a grammar
    has none), `layer` 1."""

    spans: list[tuple[int, int, int]] = field(default_factory=list)
    tags: list[int] = field(default_factory=list)
    decode: str = "viterbi"
    score: float = math.nan  # Viterbi: the tree's log-probability; MBR: its summed span marginals

    def __post_init__(self):
        self.nested = nested_from_spans(self.words, [(s, t + 1) for s, t, _ in self.spans])  # (ends exclusive)

    def at(self, layer: Layer) -> GrammarParse:
        """The one tree there is."""
        return self

    @property
    def labelled(self) -> str:
        """The tree with its labels, bracketed: `NT-k` the nonterminals, `T-k` the preterminals."""
        return labelled_bracketing(self.words, self.spans, self.tags)

    def record_fields(self) -> dict:
        """The labelled tree, each span with its nonterminal, each word's preterminal, and how it was decoded."""
        return {"labelled_tree": self.labelled, "spans": [list(span) for span in self.spans], "tags": self.tags,
                "decode": self.decode, "score": self.score if math.isfinite(self.score) else None}  # (one word: none)

    def notes(self) -> list[str]:
        return [f"labelled ({self.decode}): {self.labelled}"]

    def labels(self) -> tuple[dict[str, str], list[str]]:
        """`NT-k` each span's nonterminal, `T-k` each word's preterminal."""
        return {f"{s}-{t + 1}": f"NT-{label}" for s, t, label in self.spans}, [f"T-{tag}" for tag in self.tags]


@dataclass
class GrammarSample(GrammarParse):
    """A sentence drawn from a grammar (`GrammarModel.sample`) with the labelled tree it was drawn with: `score` is
    its log p(words, tree) (natural log; a Compound PCFG's given the z it was drawn with), `redraws` how many trees
    longer than the length limit were drawn for it and thrown away."""

    decode: str = "sample"
    redraws: int = 0

    @property
    def log_prob(self) -> float:
        """log p(words, tree) under the grammar."""
        return self.score

    def record_fields(self) -> dict:
        """The labelled tree, each span with its nonterminal, each word's preterminal, and log p(words, tree)."""
        return {"labelled_tree": self.labelled, "spans": [list(span) for span in self.spans], "tags": self.tags,
                "log_prob": self.score}

    def notes(self) -> list[str]:
        return [f"labelled: {self.labelled}", f"log p(words, tree) = {self.score:.4f}"]


class GrammarModel(TreeModel):
    """A Neural or Compound PCFG with its vocabulary, from `treenets.load`: `parse` (labelled trees, `decode`
    "viterbi" or "mbr"), `score` (log-probabilities of sentences) and `sample` (sentences drawn with their trees)."""

    decoders = DECODERS
    tree_source = "its grammar"

    def _batch(self, tokens: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Word ids [B, N] (right-padded) and lengths [B] of sentences already read."""
        ids = [torch.tensor(self.vocab.encode(words)[0]) for words in tokens]
        lengths = torch.tensor([len(words) for words in tokens])
        return torch.nn.utils.rnn.pad_sequence(ids, batch_first=True).to(self.device), lengths

    @torch.no_grad()
    def _grammar(self, tokens: list[list[str]]):
        """The grammar of each sentence (a Compound PCFG's with z at its posterior mean, as Kim's code parses), and
        the lengths: its rules alone, without the inside algorithm of the likelihood."""
        ids, lengths = self._batch(tokens)
        z = self.net.encode(ids, lengths)[0] if self.net.z_dim else None
        return self.net.grammar(ids, z), lengths

    def _decode_bytes(self, longest: int, decode: str) -> int:
        """`decode_bytes` of a sentence of `longest` words under this grammar; an error for one that would take
        more than half this machine's memory alone, naming its length (before: killed by the system)."""
        needed = decode_bytes(longest, self.net.nonterminals, self.net.factored_rules, decode)
        if needed > memory_bytes() // 2:
            raise TreenetsError(f"a sentence of {longest} words: its {decode} chart takes about {needed / 2**30:,.0f} "
                                f"GiB, more than half of this machine's memory ({memory_bytes() / 2**30:,.0f} GiB)"
                                + ("; --decode viterbi parses it in a fraction of that" if decode == "mbr" else "")
                                + ", or split it into shorter lines")
        return needed

    def trees_of_tokens(self, tokens: list[list[str]], decode: str = "viterbi", batch_size: int = 64):
        """For sentences already read: each one's (spans, tags, score) by `decode`, in batches of similar length.
        A one-word sentence is its word alone under the root (no span of two words; its tag the preterminal
        most likely to emit it)."""
        if decode not in DECODERS:
            raise TreenetsError(f"decode {decode!r}: expected {' or '.join(map(repr, DECODERS))}")
        result = [None] * len(tokens)
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        for i in [i for i in order if len(tokens[i]) == 1]:
            result[i] = ([], [int(self._grammar([tokens[i]])[0].terms[0, 0].argmax())], math.nan)
        longer = [i for i in order if len(tokens[i]) >= 2]
        start = 0
        while start < len(longer):
            # at most `batch_size` sentences, fewer where their charts would pass `BATCH_BYTES`
            longest = len(tokens[longer[min(start + batch_size, len(longer)) - 1]])  # (ascending: the chunk's last)
            size = max(1, min(batch_size, BATCH_BYTES // self._decode_bytes(longest, decode)))
            chunk, start = longer[start : start + size], start + size
            grammar, lengths = self._grammar([tokens[i] for i in chunk])
            if decode == "viterbi":
                found = [(tree.spans, tree.tags, tree.score) for tree in viterbi(grammar, lengths)]
            else:
                found = [(tree.spans, tree.tags, tree.score) for tree in mbr(marginals(grammar, lengths), lengths)]
            for i, tree in zip(chunk, found):
                result[i] = tree
        return result

    def parse(self, sentences: str | list, layer: Layer | None = None, split: str = "official",
              batch_size: int = 64, pretokenized: bool = False, decode: str = "viterbi"):
        """The grammar's labelled trees (`decode`: "viterbi", the most probable tree, or "mbr", the tree of the
        largest summed span marginals).

        Returns:
            a `GrammarParse` for a string (`.words`, `.tree`, `.nested`, `.spans`, `.tags`, `.labelled`), else a
            list of them.
        """
        if isinstance(sentences, str):
            return self.parse([sentences], layer, split, batch_size, pretokenized, decode)[0]
        if split not in self.splits:
            raise TreenetsError(f"split {split!r}: a grammar's trees are its own (no split rule applies)")
        self.layers("default" if layer is None else layer)
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        trees = self.trees_of_tokens([words for words, _ in readings], decode, batch_size)
        return [GrammarParse(words, torch.zeros(0, len(words)), 1, "official",
                             [w for w in words if w not in self.vocab], dropped, spans=list(spans), tags=list(tags),
                             decode=decode, score=score)
                for (words, dropped), (spans, tags, score) in zip(readings, trees)]

    def _sampling_tables(self, z: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """One grammar's tables in log space, as `sample_trees` takes them: roots [NT], emissions [T, V], and rules
        [NT, S, S] (`rule_tables`: the Neural and Compound PCFGs) or left and right [NT, S] (`productions`:
        SimplePCFG's independent left and right productions); z [1, z_dim] a compound grammar's, else None."""
        if hasattr(self.net, "productions"):
            roots, left, right = self.net.productions(z)
            return {"roots": roots[0], "emissions": self.net.emissions(z)[0], "left": left[0], "right": right[0]}
        roots, rules, emissions = self.net.rule_tables(z)
        return {"roots": roots[0], "emissions": emissions[0], "rules": rules[0]}

    @torch.no_grad()
    def sample(self, n: int, seed: int | None = None, max_length: int = 100) -> list[GrammarSample]:
        """`n` sentences drawn from the grammar, each with the labelled tree it was drawn with (top-down: the root's
        nonterminal, each nonterminal's two children, each preterminal's word; `treenets.nn.sampling`) and its
        log p(words, tree). A tree of more than `max_length` words is drawn again, so the sentences follow the
        grammar's distribution given length <= max_length.

        A Compound PCFG first draws each sentence's z ~ N(0, I) (all n at once, from the same generator), then the
        sentence from the grammar of its z. `seed`: the generator's (None: a fresh one each call); the same seed, n
        and max_length give the same sentences.

        Returns:
            a `GrammarSample` per sentence (`.words`, `.tree`, `.nested`, `.spans`, `.tags`, `.labelled`,
            `.log_prob`, `.redraws`).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise TreenetsError(f"n {n!r}: expected how many sentences to draw, a whole number of at least 1")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
            raise TreenetsError(f"max_length {max_length!r}: expected a whole number of at least 2 (a grammar's "
                                "root is a nonterminal, over two or more words)")
        generator = torch.Generator()
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        if self.net.z_dim:  # one grammar per sentence: z ~ N(0, I), the prior (no sentence to infer it from)
            z = torch.randn(n, self.net.z_dim, generator=generator).to(self.device)
            trees = [tree for i in range(n) for tree in sample_trees(**self._sampling_tables(z[i : i + 1]),
                                                                     generator=generator, max_length=max_length)]
        else:
            trees = sample_trees(**self._sampling_tables(None), generator=generator, count=n, max_length=max_length)
        samples = []
        for tree in trees:
            words = [self.vocab.words[i] for i in tree.words]
            samples.append(GrammarSample(words, torch.zeros(0, len(words)), 1, "official", [], spans=tree.spans,
                                         tags=tree.tags, score=tree.log_prob, redraws=tree.redraws))
        return samples

    @torch.no_grad()
    def log_probs(self, tokens: list[list[str]], batch_size: int = 64) -> list[float]:
        """log p(sentence) of sentences already read (natural log; the Compound PCFG's: the ELBO with z drawn from
        q(z | sentence) by a generator seeded at each call, a lower bound); -inf for a one-word sentence, which has
        no tree."""
        result = [-math.inf] * len(tokens)
        longer = sorted((i for i in range(len(tokens)) if len(tokens[i]) >= 2), key=lambda i: len(tokens[i]))
        draws = torch.Generator().manual_seed(0)  # a Compound PCFG's z: the same draws at every call
        for start in range(0, len(longer), batch_size):
            chunk = longer[start : start + batch_size]
            ids, lengths = self._batch([tokens[i] for i in chunk])
            noise = {"noise": torch.randn(len(chunk), self.net.z_dim, generator=draws).to(self.device)} \
                if self.net.z_dim else {}
            run = self.net(ids, lengths, **noise)
            for i, value in zip(chunk, (-(run.nll + run.kl)).tolist()):
                result[i] = value
        return result

    def score(self, sentences: str | list, pretokenized: bool = False) -> GrammarScore | list[GrammarScore]:
        """log p(sentence) of each sentence (a string, or a list of sentences: strings or token lists); a
        Compound PCFG's is the evidence lower bound with z drawn from q(z | sentence)."""
        if isinstance(sentences, str):
            return self.score([sentences], pretokenized)[0]
        readings = [self._read(sentence, pretokenized) for sentence in sentence_list(sentences)]
        values = self.log_probs([words for words, _ in readings])
        return [GrammarScore(words, value, [w for w in words if w not in self.vocab], dropped,
                             bound=bool(self.net.z_dim))
                for (words, dropped), value in zip(readings, values)]

    def evaluate(self, sentences: list, batch_size: int = 64, pretokenized: bool = False):
        """The task's metric of sentences (strings or token lists) as `treenets eval --file` gives it (the task's
        `evaluate_text`): perplexity per word and closing `</s>` (a Compound PCFG's bound, `ppl_bound`) and the
        mean KL, over the sentences of two or more words (one word has no tree: an error if none is longer)."""
        sentences = sentence_list(sentences)
        return registered_tasks()[self.config.task].evaluate_text(
            self, [(f"sentence {i + 1}", s) for i, s in enumerate(sentences)], checked_batch_size(batch_size),
            pretokenized, "sentences")

    def _predict_inputs(self, pretokenized: bool = False, sentence: str | None = None) -> GrammarScore:
        if sentence is None:
            raise TreenetsError("predict: a grammar needs --sentence (or use `treenets parse`)")
        self.read(sentence, pretokenized, "--sentence")
        return self.score(sentence, pretokenized)
