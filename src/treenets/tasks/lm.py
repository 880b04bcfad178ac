"""Word-level language modelling on a Mikolov-format corpus (Penn Treebank), as in AWD-LSTM and ON-LSTM.

The corpus is one token stream (`<eos>` appended to every line) cut into `batch_size` columns and read
time-major in windows of about `bptt` steps; the hidden state is carried from window to window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from treenets.errors import TreenetsError
from treenets.nn.onlstm import ONLSTMLanguageModel
from treenets.nn.prpn import PRPNLanguageModel
from treenets.tasks.base import Task, evaluating, perplexity
from treenets.vocab import Vocab

EOS = "<eos>"
UNK = "<unk>"
# The tokens around a sentence read on its own, as each task trains the model to see them.
BOUNDARIES = {"lm": (EOS, EOS), "sentence-lm": ("<s>", "</s>")}


def read_lm_file(path: Path) -> list[list[str]]:
    """Sentences of a Mikolov-format file: one sentence per line, tokens separated by spaces, no `<eos>`.

    Raises:
        TreenetsError: naming the file (and line) when it is missing, binary, not UTF-8, looks like a
            bracketed treebank, contains tabs or `<eos>`, or holds no token at all.
    """
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected a Mikolov-format text file; "
                            "`treenets data download ptb` fetches the Penn Treebank one)")
    raw = path.read_bytes()
    if b"\0" in raw:
        raise TreenetsError(f"{path}: binary file; expected plain text with one sentence per line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TreenetsError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None
    sentences = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "\t" in line:
            raise TreenetsError(f"{path}:{lineno}: tab character; expected tokens separated by spaces")
        tokens = line.split()
        if tokens[:1] and tokens[0].startswith("("):
            raise TreenetsError(f"{path}:{lineno}: looks like a bracketed tree; expected plain sentences, "
                                "one per line (Mikolov PTB format)")
        if EOS in tokens:
            raise TreenetsError(f"{path}:{lineno}: contains {EOS}, which the reader appends to every line itself")
        sentences.append(tokens + [EOS])
    if not any(len(s) > 1 for s in sentences):
        raise TreenetsError(f"{path}: no tokens; expected one sentence per line")
    return sentences


def encode_stream(sentences: list[list[str]], vocab: Vocab, path: Path) -> torch.Tensor:
    """The token ids of all sentences in order, as one 1-D LongTensor (unknown words -> `<unk>`)."""
    ids = []
    for lineno, sentence in enumerate(sentences, start=1):
        try:
            ids.extend(vocab.encode(sentence)[0])
        except TreenetsError as exc:
            raise TreenetsError(f"{path}:{lineno}: {exc}") from None
    return torch.tensor(ids, dtype=torch.long)


def batchify(stream: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut a 1-D stream into `batch_size` contiguous columns, time-major `[N // batch_size, batch_size]`.

    The tokens that do not fill a whole row are dropped (as in the official code).
    """
    rows = stream.numel() // batch_size
    if rows < 2:
        raise TreenetsError(f"{stream.numel()} tokens are too few for batch size {batch_size}")
    return stream[: rows * batch_size].view(batch_size, rows).t().contiguous()


def shard_columns(batched: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """The columns of a batchified stream that belong to process `rank` of `world`."""
    width = batched.size(1)
    if width % world:
        raise TreenetsError(f"batch size {width} is not divisible by the number of processes {world}")
    per = width // world
    return batched[:, rank * per : (rank + 1) * per].contiguous()


@dataclass
class Window:
    input: torch.Tensor  # [T, B]
    target: torch.Tensor  # [T, B]
    lr_scale: float  # seq_len / bptt (1 for fixed-length windows)

    @property
    def size(self) -> int:
        return self.target.numel()


class BPTTStream:
    """Reads a batchified stream window by window; its position and length sampler can be saved and restored.

    With `variable=True` each window's length is drawn as in AWD-LSTM: `bptt` with probability 0.95 and
    `bptt / 2` otherwise, plus N(0, 5) noise, at least 5 steps. The draws come from the stream's own
    generator so that a resumed run draws the same lengths.
    """

    def __init__(self, batched: torch.Tensor, bptt: int, variable: bool, seed: int):
        self.batched, self.bptt, self.variable = batched, bptt, variable
        self.generator = torch.Generator().manual_seed(seed)
        self.position = 0
        self.offset = 0  # where in the 1-D stream the columns were cut (see `LMTask`, `random_offset`)

    def draw_offset(self, limit: int) -> int:
        """A random start in [0, limit) from the stream's generator (0 when limit is 0)."""
        self.offset = int(torch.randint(0, max(limit, 1), (), generator=self.generator).item())
        return self.offset

    def __len__(self) -> int:
        """Windows per pass at the nominal length."""
        return math.ceil((self.batched.size(0) - 1) / self.bptt)

    def next_window(self) -> Window | None:
        """The next window, or None at the end of the stream (then the position is reset to 0)."""
        remaining = self.batched.size(0) - 1 - self.position
        if remaining < 1 or (self.variable and remaining < 2):
            self.position = 0
            return None
        length = self.bptt
        if self.variable:
            half = torch.rand((), generator=self.generator).item() >= 0.95
            mean = self.bptt / 2.0 if half else float(self.bptt)
            length = max(5, int(torch.normal(mean, 5.0, (), generator=self.generator).item()))
        scale = length / self.bptt
        length = min(length, remaining)
        i = self.position
        self.position += length
        return Window(self.batched[i : i + length], self.batched[i + 1 : i + 1 + length], scale)

    def state_dict(self) -> dict:
        return {"position": self.position, "offset": self.offset, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.position, self.offset = int(state["position"]), int(state["offset"])
        self.generator.set_state(state["generator"])


def detach_state(state):
    """The same nested state (lists, tuples, named tuples of tensors) cut from its autograd history."""
    return map_state(state, torch.Tensor.detach)


def map_state(state, fn):
    if isinstance(state, torch.Tensor):
        return fn(state)
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return type(state)(*(map_state(s, fn) for s in state))
    return type(state)(map_state(s, fn) for s in state)


def flatten_state(state) -> list[torch.Tensor]:
    """The tensors of a nested state in order (a checkpoint stores these, not the named tuples)."""
    if isinstance(state, torch.Tensor):
        return [state]
    return [t for s in state for t in flatten_state(s)]


def unflatten_state(template, tensors: list[torch.Tensor]):
    """`template`'s structure filled with `tensors` (in `flatten_state` order)."""
    it = iter(tensors)
    return map_state(template, lambda _: next(it))


def _unwrap(model):
    return getattr(model, "module", model)


@dataclass
class LMTask(Task):
    """Language modelling on a token stream: data, loss and metric for the shared training loop."""

    streams: dict = field(default_factory=dict)

    name = "lm"
    units = "tokens"
    metric = "ppl"  # lower is better

    def __post_init__(self):
        cfg = self.config.data
        folder = self.data_folder(f"a folder with {cfg.train}, {cfg.valid}, {cfg.test}")
        files = {"train": folder / cfg.train, "valid": folder / cfg.valid, "test": folder / cfg.test}
        sentences = {split: read_lm_file(files[split]) for split in self.splits}
        if self.vocab is None:
            self.vocab = Vocab.from_corpus(sentences["train"], unk=UNK)
        self.streams = {s: encode_stream(sentences[s], self.vocab, files[s]) for s in self.splits}
        if "train" in self.splits:
            self.train_stream = BPTTStream(self._cut_train(0), cfg.bptt, cfg.variable_bptt, self.config.train.seed)
            self.hidden = None

    def _cut_train(self, offset: int) -> torch.Tensor:
        """This process's columns of the training stream, cut from `offset` on."""
        batched = batchify(self.streams["train"][offset:], self.config.data.batch_size)
        return shard_columns(batched, self.rank, self.world).to(self.device)

    # --- the interface of the training loop -------------------------------------------------------------
    def build_model(self) -> ONLSTMLanguageModel | PRPNLanguageModel:
        return LanguageModel.build_net(self.config, len(self.vocab))

    def batches_per_epoch(self) -> int:
        return len(self.train_stream)

    def next_batch(self) -> Window | None:
        stream = self.train_stream
        if stream.position == 0 and self.config.data.random_offset:  # PRPN: a new cut every epoch
            stream.batched = self._cut_train(stream.draw_offset(self.streams["train"].numel() %
                                                                self.config.data.batch_size))
        window = stream.next_window()
        if window is None:
            self.hidden = None  # every epoch starts from a zero state, as in the official code
        return window

    def train_loss(self, model, batch: Window) -> tuple[torch.Tensor, float]:
        """Loss to minimise (cross-entropy + AR + TAR) and the summed cross-entropy for reporting."""
        hidden = detach_state(self.hidden) if self.hidden is not None else None
        out = model(batch.input, hidden)
        self.hidden = out.state
        logits = _unwrap(model).decoder(out.output)
        xent = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.target.reshape(-1))
        loss = xent
        reg = self.config.loss
        # Both regularisers act on the last layer's output before dropout (as the official ON-LSTM does).
        if reg.ar:
            loss = loss + reg.ar * out.last_layer.pow(2).mean()
        if reg.tar:
            loss = loss + reg.tar * (out.last_layer[1:] - out.last_layer[:-1]).pow(2).mean()
        return loss, xent.item() * batch.size

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> dict:
        """Mean cross-entropy over every target of `split` and its perplexity (all processes together)."""
        size = batch_size or (self.config.data.test_batch_size if split == "test" else self.config.data.eval_batch_size)
        batched = batchify(self.streams[split], size)
        if size % self.world == 0:
            batched = shard_columns(batched, self.rank, self.world)
        elif self.rank != 0:  # columns cannot be shared out: process 0 evaluates alone
            batched = batched[:0]
        stream = BPTTStream(batched.to(self.device), self.config.data.bptt, variable=False, seed=0)
        total = torch.zeros(2, dtype=torch.float64, device=self.device)
        state = None
        with evaluating(model) as net:
            while (window := stream.next_window()) is not None:
                out = net(window.input, state)
                state = out.state
                logits = net.decoder(out.output)
                total[0] += F.cross_entropy(logits.view(-1, logits.size(-1)), window.target.reshape(-1),
                                            reduction="sum").double()
                total[1] += window.size
                if progress is not None:
                    progress(window.size)
        return perplexity(total, self.world)

    def state_dict(self) -> dict:
        hidden = None if self.hidden is None else flatten_state(detach_state(self.hidden))
        return {"stream": self.train_stream.state_dict(), "hidden": hidden}

    def load_state_dict(self, state: dict, model) -> None:
        """Restore the data position and the hidden state (shaped like `model`'s)."""
        self.train_stream.load_state_dict(state["stream"])
        self.train_stream.batched = self._cut_train(self.train_stream.offset)
        hidden = state["hidden"]
        if hidden is not None:
            template = _unwrap(model).initial_state(self.train_stream.batched.size(1))
            hidden = unflatten_state(template, [h.to(self.device) for h in hidden])
        self.hidden = hidden


_DIGITS = re.compile(r"[0-9]+")


class LanguageModel:
    """A trained language model with its vocabulary: score sentences, read its syntactic distances.

    Obtained from `treenets.load(checkpoint)`. Sentences are strings (split on white space) or lists of
    tokens. Text is normalised to the vocabulary's conventions when the vocabulary has them: lower-cased if
    it holds no upper-case word, digit runs replaced by `N` if it holds `N` and no digits (the PTB rules).
    Words outside the vocabulary are read as `<unk>` and reported.
    """

    NETS = {"onlstm": ONLSTMLanguageModel, "prpn": PRPNLanguageModel}

    @classmethod
    def build_net(cls, config, vocab_size: int):
        """The network described by `config.model`, freshly initialised."""
        return cls.NETS[config.model.name].from_config(config.model, vocab_size)

    def __init__(self, net, vocab: Vocab, config, device="cpu"):
        self.net, self.vocab, self.config = net.eval(), vocab, config
        self.device = torch.device(device)
        self.bos, self.eos = BOUNDARIES[config.task] if config is not None else (EOS, EOS)
        words = vocab.words
        self._lower = not any(w != w.lower() for w in words if w not in (EOS, UNK))
        self._digits = "N" in vocab and not any(_DIGITS.search(w) for w in words)

    def tokenize(self, sentence: str | list[str]) -> list[str]:
        tokens = sentence.split() if isinstance(sentence, str) else list(sentence)
        if self._lower:
            tokens = [t.lower() for t in tokens]
        if self._digits:
            tokens = [_DIGITS.sub("N", t) for t in tokens]
        return tokens

    def _encode_batch(self, sentences: list):
        """Tokens, ids and unknown words of each sentence, and a right-padded `[T, B]` batch of
        `<bos> w_1 ... w_n <eos>` (padding at the end does not change earlier positions of a left-to-right
        model)."""
        rows = []
        for sentence in sentences:
            tokens = self.tokenize(sentence)
            if not tokens:
                raise TreenetsError(f"empty sentence {sentence!r}: expected at least one word")
            ids, unknown = self.vocab.encode([self.bos] + tokens + [self.eos])
            rows.append((tokens, ids, unknown))
        width = max(len(ids) for _, ids, _ in rows)
        batch = torch.full((width, len(rows)), self.vocab.index[self.eos], dtype=torch.long)
        for j, (_, ids, _) in enumerate(rows):
            batch[: len(ids), j] = torch.tensor(ids)
        return rows, batch.to(self.device)

    @torch.no_grad()
    def score(self, sentences: str | list) -> SentenceScore | list[SentenceScore]:
        """Log-probabilities of each word and of the closing boundary token, each sentence read after the
        opening one (`<eos>` for a stream language model, `<s>`/`</s>` for a sentence-level one).

        Args:
            sentences: one sentence as a string, or a list of sentences (strings or token lists).

        Returns:
            a `SentenceScore` for a string, else a list of them.
        """
        if isinstance(sentences, str):
            return self.score([sentences])[0]
        rows, batch = self._encode_batch(sentences)
        out = self.net(batch[:-1])
        logp = torch.log_softmax(self.net.decoder(out.output), dim=-1)
        token_logp = logp.gather(-1, batch[1:].unsqueeze(-1)).squeeze(-1).cpu()
        return [
            SentenceScore(tokens, token_logp[: len(ids) - 1, j].tolist(), unknown)
            for j, (tokens, ids, unknown) in enumerate(rows)
        ]

    @torch.no_grad()
    def distances(self, sentences: str | list, input_gate: bool = False, batch_size: int = 64):
        """Per-layer syntactic distances of every word: `[layers, n_words]` for a string, else a list of them
        (sentences as in `score`), computed in batches of similar length.

        The sentence is read between the boundary tokens the model was trained with (`<eos>` on both sides
        for a stream language model, as the official ON-LSTM parsing code does; `<s>`, `</s>` for a
        sentence-level one, as PRPN's) and the boundary positions are dropped. The distances are the ones
        the model parses with (ON-LSTM: `1 - mean(master forget gate)` per layer; PRPN: the parsing network's
        gate, one row); with `input_gate=True`, ON-LSTM's `mean(master input gate)` instead.
        """
        if isinstance(sentences, str):
            return self.distances([sentences], input_gate, batch_size)[0]
        order = sorted(range(len(sentences)), key=lambda i: len(self.tokenize(sentences[i])))
        result = [None] * len(sentences)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            rows, batch = self._encode_batch([sentences[i] for i in chunk])
            out = self.net(batch)
            values = getattr(out, "distance_input", None) if input_gate else out.distances
            if values is None:
                raise TreenetsError(f"{type(self.net).__name__} has no input-gate distances")
            values = values.cpu()
            for j, (index, (tokens, _, _)) in enumerate(zip(chunk, rows)):
                result[index] = values[:, 1 : 1 + len(tokens), j]
        return result

    @property
    def default_layer(self) -> int:
        """The layer of distances parsed by default (the paper's choice: ON-LSTM's second, PRPN's only one)."""
        return self.net.default_parse_layer

    def parse(self, sentence: str | list[str], layer: int | str | None = None, split: str = "official"):
        """The tree the model induces for `sentence`, as an `nltk.Tree` (nodes labelled `X`).

        Args:
            sentence: a string or a list of tokens.
            layer: 0-based layer index, `"mean"` for the mean of the layers, None for `default_layer`.
            split: `"official"` or `"before"` (see `treenets.trees.tree_from_distances`).
        """
        from treenets.trees import tree_from_distances
        from treenets.trees.draw import to_nltk

        tokens = self.tokenize(sentence)
        distances = self.distances([tokens])[0]
        chosen = distances.mean(0) if layer == "mean" else distances[self.default_layer if layer is None else layer]
        tree = tree_from_distances(tokens, chosen.tolist(), split)
        return to_nltk(tree if isinstance(tree, list) else [tree])


@dataclass
class SentenceScore:
    tokens: list[str]
    logprobs: list[float]  # natural log; one per token, then one for the closing <eos>
    unknown: list[str]  # tokens read as <unk>

    @property
    def total(self) -> float:
        return sum(self.logprobs)

    @property
    def perplexity(self) -> float:
        return math.exp(-self.total / len(self.logprobs))
