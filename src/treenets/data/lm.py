"""Language-model data in the Mikolov PTB format, as AWD-LSTM and ON-LSTM read it: word-level files
(`ptb.*.txt`) and character-level ones (`ptb.char.*.txt`: the same sentences, characters separated by spaces).

The corpus is one token stream (`<eos>` appended to every line) cut into `batch_size` columns and read
time-major in windows of about `bptt` steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import check_lines
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch

EOS = "<eos>"
UNK = "<unk>"
WORD_BOUNDARY = "_"  # the character that stands for the space between words in character-level files


def read_lm_file(path: Path) -> list[list[str]]:
    """Sentences of a Mikolov-format file: one sentence per line, tokens separated by spaces, no `<eos>`.

    Raises:
        TreenetsError: naming the file (and line) when it is missing, binary, not UTF-8, looks like a
            bracketed treebank, contains tabs or `<eos>`, or holds no token at all.
    """
    return _sentences(path, _read_text(path, "a Mikolov-format text file", "ptb").splitlines())


def read_char_lm_file(path: Path) -> list[list[str]]:
    """Sentences of a character-level Mikolov file (`ptb.char.*.txt`): one sentence per line, its characters
    separated by spaces, `_` between words (`<unk>` is spelled `< u n k >`), no `<eos>`.

    Mikolov's files end with a line break and a lone space: white space after the last line break is not a
    sentence (the official readers would count it as an empty one).

    Raises:
        TreenetsError: as `read_lm_file`, and naming the file, line and token when a token is longer than one
            character (e.g. a word-level file given as a character corpus).
    """
    text = _read_text(path, "a character-level Mikolov-format file (ptb.char.*)", "ptb-char")
    tail = text[text.rfind("\n") + 1 :]
    if tail.isspace():
        text = text[: len(text) - len(tail)]
    sentences = _sentences(path, text.splitlines())
    for lineno, sentence in enumerate(sentences, start=1):
        token = next((t for t in sentence[:-1] if len(t) != 1), None)
        if token is not None:
            raise TreenetsError(f"{path}:{lineno}: token {token!r} is not one character; expected characters "
                                f"separated by spaces with `{WORD_BOUNDARY}` between words (Mikolov's ptb.char.* "
                                "format, e.g. 't h e _ c a t'), not words")
    return sentences


def _read_text(path: Path, expected: str, dataset: str) -> str:
    """The text of a corpus file; errors name the file when it is missing, binary or not UTF-8 (`expected`
    describes the format, `dataset` is what `treenets data download` fetches)."""
    if not path.exists():
        raise TreenetsError(f"{path}: missing (expected {expected}; "
                            f"`treenets data download {dataset}` fetches the Penn Treebank one)")
    return read_text(path, f"{expected}, one sentence per line")


def _sentences(path: Path, lines: list[str]) -> list[list[str]]:
    """The tokens of each line of `path` with `<eos>` appended; errors name the file and line."""
    check_lines(lines, path)
    sentences = []
    for lineno, line in enumerate(lines, start=1):
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


def encode_stream(sentences: list[list[str]], vocab: Vocab, path: Path) -> tuple[np.ndarray, int]:
    """The token ids of all sentences in order, as one 1-D int64 array (unknown words -> `<unk>`), and how many
    tokens were unknown."""
    ids, unknown = [], 0
    for lineno, sentence in enumerate(sentences, start=1):
        try:
            sentence_ids, missing = vocab.encode(sentence)
        except TreenetsError as exc:
            raise TreenetsError(f"{path}:{lineno}: {exc}") from None
        ids.extend(sentence_ids)
        unknown += len(missing)
    return np.array(ids, dtype=np.int64), unknown


def check_ids(ids: np.ndarray, vocab_size: int | None, where: str) -> None:
    """An error naming `where` for an id at or above `vocab_size` (None: no check): a damaged corpus file."""
    if vocab_size is not None and ids.size and ids.max() >= vocab_size:
        raise TreenetsError(f"{where}: id {int(ids.max())} in a vocabulary of {vocab_size:,}; the file is damaged or "
                            "from another preparation: prepare the corpus again")


class StreamColumns:
    """A 1-D token stream cut into `batch_size` contiguous columns, read time-major `[rows, batch_size]` as if
    the stream had been reshaped (as the official code's `batchify`), without copying it: `columns[i:j]` gathers
    rows i..j-1 from the stream when they are read, so a memory-mapped corpus (`treenets.data.corpus`) is never
    held in memory. The tokens after `offset` that do not fill a whole row are dropped.

    Args:
        stream: the ids, a 1-D numpy array (or memory map).
        batch_size: columns of the whole batch (all processes together).
        offset: where in the stream the columns start (PRPN cuts each epoch from a random offset).
        rank, world: this process reads columns `rank * batch_size / world` onwards, `batch_size / world` of them
            (DistributedDataParallel: each process its own columns).
        device: where the rows go (a LongTensor).
        vocab_size: the size of the vocabulary the stream was encoded with; an id at or above it is an error naming
            `where` (a damaged corpus file), not an index error in the embedding. None: not checked.
        id_map: the model's id of each of the stream's ids, when the stream was encoded with another vocabulary
            (a prepared corpus read by a model trained elsewhere).
    """

    def __init__(self, stream: np.ndarray, batch_size: int, offset: int = 0, rank: int = 0, world: int = 1,
                 device=None, vocab_size: int | None = None, id_map: np.ndarray | None = None,
                 where: str = "the corpus"):
        rows = (len(stream) - offset) // batch_size
        if rows < 2:
            raise TreenetsError(f"{len(stream) - offset} tokens are too few for batch size {batch_size}")
        if batch_size % world:
            raise TreenetsError(f"batch size {batch_size} is not divisible by the number of processes {world}")
        per = batch_size // world
        self.stream, self.rows, self.device, self.where = stream, rows, device, where
        self.vocab_size, self.id_map = vocab_size, id_map
        self.starts = offset + rows * np.arange(rank * per, (rank + 1) * per)  # where each column begins

    def size(self, dim: int) -> int:
        return (self.rows, len(self.starts))[dim]

    def __getitem__(self, rows: slice) -> torch.Tensor:
        """Rows `rows` (a slice with step 1) as a `[len, columns]` LongTensor on the device."""
        first, stop, _ = rows.indices(self.rows)
        ids = self.stream[self.starts[None, :] + np.arange(first, max(first, stop))[:, None]]
        check_ids(ids, self.vocab_size, self.where)
        if self.id_map is not None:
            ids = self.id_map[ids]
        return torch.from_numpy(ids.astype(np.int64)).to(self.device)


@dataclass
class Window(Batch):
    input: torch.Tensor  # [T, B]
    target: torch.Tensor  # [T, B]
    lr_scale: float  # seq_len / bptt (1 for fixed-length windows): the learning rate is scaled by it

    @property
    def size(self) -> int:
        return self.target.numel()


class BPTTStream:
    """Reads a stream's columns (`StreamColumns`) window by window; its position and length sampler can be saved
    and restored.

    With `variable=True` each window's length is drawn as in AWD-LSTM: `bptt` with probability 0.95 and
    `bptt / 2` otherwise, plus N(0, 5) noise, at least 5 steps. The draws come from the stream's own
    generator so that a resumed run draws the same lengths.
    """

    def __init__(self, columns: StreamColumns, bptt: int, variable: bool, seed: int):
        self.columns, self.bptt, self.variable = columns, bptt, variable
        self.generator = torch.Generator().manual_seed(seed)
        self.position = 0
        self.offset = 0  # where in the 1-D stream the columns were cut (see `LMTask`, `random_offset`)

    def draw_offset(self, limit: int) -> int:
        """A random start in [0, limit) from the stream's generator (0 when limit is 0)."""
        self.offset = int(torch.randint(0, max(limit, 1), (), generator=self.generator).item())
        return self.offset

    def __len__(self) -> int:
        """Windows per pass at the nominal length."""
        return math.ceil((self.columns.size(0) - 1) / self.bptt)

    def next_window(self) -> Window | None:
        """The next window, or None at the end of the stream (then the position is reset to 0)."""
        remaining = self.columns.size(0) - 1 - self.position
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
        rows = self.columns[i : i + length + 1]
        return Window(rows[:-1], rows[1:], scale)

    def state_dict(self) -> dict:
        return {"position": self.position, "offset": self.offset, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.position, self.offset = int(state["position"]), int(state["offset"])
        self.generator.set_state(state["generator"])
