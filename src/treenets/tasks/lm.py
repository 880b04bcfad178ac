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
from treenets.core.optim import OptimConfig, SGDConfig
from treenets.core.schema import NonNegativeFloat, PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.corpus import is_prepared
from treenets.data.lm import EOS, UNK, BPTTStream, StreamColumns, Window, encode_stream, read_lm_file
from treenets.nn.graphs import EvaluationWindows, capture_refusal
from treenets.nn.onlstm.model import ONLSTMConfig
from treenets.nn.registry import config_union
from treenets.nn.utils import flatten_state, unflatten_state, unwrap
from treenets.predictors.lm import LanguageModel
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Perplexity
from treenets.text import NormalizerName

# The language models: every model folder's config for the language-model tasks (`treenets.nn.registry`), told
# apart by `name`; each config's `build(vocab_size)` makes its network.
LanguageModelConfig = config_union("lm")


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
        self._state_templates = {}  # batch size -> the model's initial state: the structure of a flat state
        self._captured_evaluation = None
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

    def initial_state(self, model, batch_size: int) -> list[torch.Tensor]:
        """The model's initial recurrent state for `batch_size` columns, as a flat list of tensors."""
        return flatten_state(unwrap(model).initial_state(batch_size))

    def _nested(self, model, state: list[torch.Tensor]):
        """A flat `state` in the model's own structure (lists and named tuples of tensors)."""
        batch_size = state[0].size(0)
        if batch_size not in self._state_templates:
            self._state_templates[batch_size] = unwrap(model).initial_state(batch_size)
        return unflatten_state(self._state_templates[batch_size], state)

    def window_loss(self, model, tokens: torch.Tensor, targets: torch.Tensor, state: list[torch.Tensor]):
        """One training window [T, B] from `state` (a flat list of tensors): (loss to minimise: cross-entropy +
        AR + TAR, the mean cross-entropy, the new state as a flat list). Device work only, so that it can be
        captured as a CUDA graph (`treenets.nn.graphs.TrainingWindows`)."""
        out = model(tokens, self._nested(model, state))
        logits = unwrap(model).decoder(out.output)
        loss, xent = language_model_loss(out, logits, targets, self.config.loss)
        return loss, xent, flatten_state(out.state)

    def _carried_state(self, model, batch: Window) -> list[torch.Tensor]:
        """The state the training window `batch` starts from: the last window's, or the initial one at an
        epoch's start."""
        if self.hidden is None:
            return self.initial_state(model, batch.input.size(1))
        return [h.detach() for h in self.hidden]

    def train_loss(self, model, batch: Window) -> tuple[torch.Tensor, float]:
        """Loss to minimise (cross-entropy + AR + TAR) and the summed cross-entropy for reporting."""
        loss, xent, self.hidden = self.window_loss(model, batch.input, batch.target, self._carried_state(model, batch))
        return loss, xent.item() * batch.size

    def train_window(self, windows, batch: Window) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward and backward of `batch` through `windows` (a `treenets.nn.graphs.TrainingWindows` made with
        `window_loss`): (the mean cross-entropy, the gradient norm before clipping), tensors on the device."""
        xent, norm, self.hidden = windows.forward_backward(batch.input, batch.target,
                                                           self._carried_state(windows.model, batch))
        return xent, norm

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
        with evaluating(model) as net:
            run = self._evaluation_windows(net)
            state = self.initial_state(net, columns.size(1))
            while (window := stream.next_window()) is not None:
                summed, state = run(window.input, window.target, state)
                metric.add(summed, window.size)
                if progress is not None:
                    progress(window.size)
        return metric.reduce(self.world)

    def _evaluation_window(self, net, tokens, targets, state):
        """(summed cross-entropy of the targets, the new state) of one evaluation window from `state`."""
        out = net(tokens, self._nested(net, state))
        logits = net.decoder(out.output)
        summed = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), reduction="sum")
        return summed, flatten_state(out.state)

    def _evaluation_windows(self, net):
        """How `evaluate` runs a window of `net`: captured as CUDA graphs where `graphs.capture_refusal` allows
        (kept for the next evaluation of the same network), else `_evaluation_window` itself."""
        if capture_refusal(self.device, self.world) is not None:
            return lambda tokens, targets, state: self._evaluation_window(net, tokens, targets, state)
        if self._captured_evaluation is None or self._captured_evaluation.model is not net:
            self._captured_evaluation = EvaluationWindows(net, self._evaluation_window)
        return self._captured_evaluation

    def state_dict(self) -> dict:
        hidden = None if self.hidden is None else [h.detach() for h in self.hidden]
        return {"stream": self.train_stream.state_dict(), "hidden": hidden}

    def load_state_dict(self, state: dict, model) -> None:
        """Restore the data position and the hidden state (a flat list of tensors)."""
        self.train_stream.load_state_dict(state["stream"])
        self.train_stream.columns = self._cut_train(self.train_stream.offset)
        hidden = state["hidden"]
        self.hidden = None if hidden is None else [h.to(self.device) for h in hidden]
