"""Word-level language modelling on a Mikolov-format corpus (Penn Treebank), as in AWD-LSTM and ON-LSTM, or on
a corpus prepared by `treenets data prepare` (memory-mapped ids, `treenets.data.corpus`).

The corpus is one token stream cut into `batch_size` columns and read time-major in windows of about `bptt`
steps (`treenets.data.lm`); the hidden state is carried from window to window. Loss: cross-entropy plus
AR/TAR; metric: perplexity.
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from treenets.config import TrainConfig
from treenets.data.corpus import is_prepared
from treenets.data.lm import EOS, UNK, BPTTStream, StreamColumns, Window, encode_stream, read_lm_file
from treenets.nn.lstm import LSTMConfig
from treenets.nn.onlstm import ONLSTMConfig
from treenets.nn.prpn import PRPNConfig
from treenets.nn.utils import detach_state, flatten_state, unflatten_state, unwrap
from treenets.optim import OptimConfig, SGDConfig
from treenets.predictors.lm import LanguageModel
from treenets.schema import NonNegativeFloat, PositiveInt, Section
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Perplexity
from treenets.text import NormalizerName
from treenets.vocab import Vocab

# The language models: each config's `build(vocab_size)` makes its network.
LanguageModelConfig = Annotated[ONLSTMConfig | PRPNConfig | LSTMConfig, Field(discriminator="name")]


class PTBDataConfig(Section):
    """A word-level corpus: a folder of files in the Mikolov PTB format (one sentence per line, `<eos>` appended
    to each), or a corpus prepared by `treenets data prepare` (then the file names below are not read)."""

    path: str = "ptb_lm"  # folder under the data root, else from the current folder (or absolute)
    train: str = "ptb.train.txt"
    valid: str = "ptb.valid.txt"
    test: str = "ptb.test.txt"
    batch_size: PositiveInt = 20
    eval_batch_size: PositiveInt = 10
    test_batch_size: PositiveInt = 1
    bptt: Annotated[int, Field(ge=2)] = 70
    variable_bptt: bool = True  # AWD-LSTM: N(bptt, 5) lengths, bptt/2 with probability 0.05
    random_offset: bool = False  # PRPN: every epoch cuts the stream into columns from a random offset
    # how the model reads text typed by a person: raw sentences into the words of this corpus (treenets.text)
    normalizer: NormalizerName = "ptb"


class LMLossConfig(Section):
    ar: NonNegativeFloat = 2.0  # [alpha] activation regularisation on the last layer's output
    tar: NonNegativeFloat = 1.0  # [beta] temporal activation regularisation (slowness)


class LMConfig(Section):
    task: Literal["lm"]
    data: PTBDataConfig = PTBDataConfig()
    model: LanguageModelConfig = ONLSTMConfig()
    loss: LMLossConfig = LMLossConfig()
    optim: OptimConfig = SGDConfig()
    train: TrainConfig = TrainConfig()


def language_model_loss(out, logits: torch.Tensor, target: torch.Tensor, reg: LMLossConfig):
    """(loss to minimise, mean cross-entropy): the cross-entropy plus AR on `out.ar_input` (the model's own choice:
    before the output dropout for the official ON-LSTM, after it for AWD-LSTM) and TAR on the last layer's output
    before dropout."""
    xent = F.cross_entropy(logits.view(-1, logits.size(-1)), target.reshape(-1))
    loss = xent
    if reg.ar:
        loss = loss + reg.ar * out.ar_input.pow(2).mean()
    if reg.tar:
        loss = loss + reg.tar * (out.last_layer[1:] - out.last_layer[:-1]).pow(2).mean()
    return loss, xent


@register
class LMTask(Task):
    """Language modelling on a token stream."""

    name = "lm"
    Config = LMConfig
    Metric = Perplexity
    Predictor = LanguageModel
    units = "tokens"
    boundaries = (EOS, EOS)  # the tokens around a sentence read on its own, as this task trains models to see them
    read_corpus = staticmethod(read_lm_file)  # path -> sentences (token lists ending in <eos>)
    level = "word"  # the prepared corpora it reads (`treenets data prepare`)

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder(f"a folder with {cfg.train}, {cfg.valid}, {cfg.test}, or a prepared corpus")
        self.folder, self.id_map, self.vocab_size, self.corpus = folder, None, None, None
        if is_prepared(folder):
            corpus = self.corpus = self.open_corpus(folder)
            if self.vocab is None:
                self.vocab = corpus.vocab
            # a model trained on another vocabulary reads the corpus through its own ids
            self.id_map, self.vocab_size = corpus.id_map(self.vocab), len(corpus.vocab)
            self.streams = {split: corpus.ids(split) for split in self.splits}
        else:
            files = {"train": folder / cfg.train, "valid": folder / cfg.valid, "test": folder / cfg.test}
            sentences = {split: self.read_corpus(files[split]) for split in self.splits}
            if self.vocab is None:
                self.vocab = Vocab.from_corpus(sentences["train"], unk=UNK)
            encoded = {s: encode_stream(sentences[s], self.vocab, files[s]) for s in self.splits}
            self.streams = {s: ids for s, (ids, _) in encoded.items()}
            self._unknown = {s: unknown for s, (_, unknown) in encoded.items()}
        if "train" in self.splits:
            self.train_stream = BPTTStream(self._cut_train(0), cfg.bptt, cfg.variable_bptt, config.train.seed)
            self.hidden = None

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        return config.model.build(vocab_size)

    def unknown_tokens(self, split: str) -> int:
        """How many tokens of `split` the model's vocabulary lacks, which it reads as `<unk>` (a corpus of other
        words: `treenets eval --corpus`)."""
        return self._unknown[split] if self.corpus is None else self.corpus.unknown_tokens(split, self.vocab)

    def _columns(self, split: str, batch_size: int, offset: int = 0, rank: int = 0, world: int = 1) -> StreamColumns:
        return StreamColumns(self.streams[split], batch_size, offset, rank, world, self.device, self.vocab_size,
                             self.id_map, where=f"{self.folder} ({split})")

    def _cut_train(self, offset: int) -> StreamColumns:
        """This process's columns of the training stream, cut from `offset` on."""
        return self._columns("train", self.config.data.batch_size, offset, self.rank, self.world)

    def batches_per_epoch(self) -> int:
        return len(self.train_stream)

    def next_batch(self) -> Window | None:
        stream = self.train_stream
        if stream.position == 0 and self.config.data.random_offset:  # PRPN: a new cut every epoch
            stream.columns = self._cut_train(stream.draw_offset(len(self.streams["train"]) %
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
        logits = unwrap(model).decoder(out.output)
        loss, xent = language_model_loss(out, logits, batch.target, self.config.loss)
        return loss, xent.item() * batch.size

    def _eval_batch_size(self, split: str, batch_size: int | None) -> int:
        return batch_size or (self.config.data.test_batch_size if split == "test" else self.config.data.eval_batch_size)

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        """The targets an evaluation reads: every token after the first of each batch column."""
        size = self._eval_batch_size(split, batch_size)
        return (len(self.streams[split]) // size - 1) * size

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> Perplexity:
        """Mean cross-entropy over every target of `split` and its perplexity, as the task's `Metric` (all
        processes together)."""
        size = self._eval_batch_size(split, batch_size)
        if size % self.world == 0:
            columns = self._columns(split, size, rank=self.rank, world=self.world)
        else:  # columns cannot be shared out: process 0 evaluates alone (every process checks the split's size)
            columns = self._columns(split, size)
            if self.rank != 0:
                return self.Metric(self.device).reduce(self.world)
        stream = BPTTStream(columns, self.config.data.bptt, variable=False, seed=0)
        metric = self.Metric(self.device)
        state = None
        with evaluating(model) as net:
            while (window := stream.next_window()) is not None:
                out = net(window.input, state)
                state = out.state
                logits = net.decoder(out.output)
                metric.add(F.cross_entropy(logits.view(-1, logits.size(-1)), window.target.reshape(-1),
                                           reduction="sum"), window.size)
                if progress is not None:
                    progress(window.size)
        return metric.reduce(self.world)

    def state_dict(self) -> dict:
        hidden = None if self.hidden is None else flatten_state(detach_state(self.hidden))
        return {"stream": self.train_stream.state_dict(), "hidden": hidden}

    def load_state_dict(self, state: dict, model) -> None:
        """Restore the data position and the hidden state (shaped like `model`'s)."""
        self.train_stream.load_state_dict(state["stream"])
        self.train_stream.columns = self._cut_train(self.train_stream.offset)
        hidden = state["hidden"]
        if hidden is not None:
            template = unwrap(model).initial_state(self.train_stream.columns.size(1))
            hidden = unflatten_state(template, [h.to(self.device) for h in hidden])
        self.hidden = hidden
