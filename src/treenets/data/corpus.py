"""A prepared corpus: token ids in binary files read by memory mapping, so that a language model trains on a
corpus of any size in constant memory (`treenets data prepare` writes one, `treenets.data.prepare`).

The folder holds

    meta.json     {"format": "treenets-corpus", "version": 1, "level": "word" | "char", "dtype": "uint16" |
                  "uint32", "normalizer", "vocabulary": {"rule", "size", "unk", "eos"}, "splits": {"train":
                  {"file": "train.bin", "tokens", "lines", "unknown"}, "valid": ..., "test": ...}, "sources":
                  [{"path", "split", "bytes", "sha256"}], "split_fraction", "seed", "treenets"}
    vocab.txt     one token per line, in id order (id = line number - 1), UTF-8
    train.bin     the ids of the training split: every line's tokens then the id of `<eos>`, as one stream of
    valid.bin     little-endian unsigned integers of `dtype` (uint16 when the vocabulary has at most 65,536
    test.bin      tokens, else uint32); nothing else (no header), so `numpy.memmap` reads it as it is

A word-level corpus reads like Mikolov's PTB files (`treenets.data.lm.read_lm_file`: tokens, `<eos>` after each
line); a character-level one like `ptb.char.*` (each word spelled out, `_` between words, `<eos>` after each
line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.vocab import Vocab
from treenets.text import NORMALIZERS

FORMAT = "treenets-corpus"
VERSION = 1  # the format this treenets writes and the newest it reads
META, VOCAB = "meta.json", "vocab.txt"
SPLITS = ("train", "valid", "test")
LEVELS = ("word", "char")


def id_dtype(vocab_size: int) -> str:
    """The smallest unsigned integer type that holds every id of a vocabulary of `vocab_size` tokens."""
    return "uint16" if vocab_size <= 2**16 else "uint32"


def is_prepared(folder: Path) -> bool:
    """Whether `folder` is a prepared corpus (it holds `meta.json`), rather than a folder of text files."""
    return (Path(folder) / META).is_file()


@dataclass(frozen=True)
class PreparedCorpus:
    """A prepared corpus folder, its meta data checked; `ids(split)` maps a split's ids without reading them."""

    folder: Path
    meta: dict
    vocab: Vocab

    @classmethod
    def open(cls, folder: str | Path) -> PreparedCorpus:
        """Read and check `folder`'s `meta.json`, `vocab.txt` and the sizes of its id files.

        Raises:
            TreenetsError: naming the file: meta data that is not this format or comes from a newer treenets,
                a vocabulary of another size than the meta data says or with a duplicate, an id file that is
                missing or of another size than its token count (truncated).
        """
        folder = Path(folder)
        meta_path = folder / META
        try:
            meta = json.loads(read_text(meta_path, "the meta data of a prepared corpus"))
        except json.JSONDecodeError as exc:
            raise TreenetsError(f"{meta_path}:{exc.lineno}: not JSON ({exc.msg}); expected the meta data of a "
                                "prepared corpus (`treenets data prepare` writes it)") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise TreenetsError(f"{meta_path}: not the meta data of a prepared corpus (expected \"format\": "
                                f"\"{FORMAT}\"; `treenets data prepare` writes it)")
        version = meta.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise TreenetsError(f"{meta_path}: a prepared corpus of format version {version!r}, written by a newer "
                                f"treenets; this one reads version {VERSION}: upgrade treenets, or prepare the corpus "
                                "again with this one")
        try:
            level, dtype, normalizer = meta["level"], np.dtype(meta["dtype"]), meta["normalizer"]
            size, unk, eos = (meta["vocabulary"][key] for key in ("size", "unk", "eos"))
            splits = {split: (meta["splits"][split]["file"], int(meta["splits"][split]["tokens"]))
                      for split in SPLITS}
        except (KeyError, TypeError, ValueError) as exc:
            raise TreenetsError(f"{meta_path}: damaged meta data ({type(exc).__name__}: {exc}); prepare the corpus "
                                "again") from None
        if level not in LEVELS or dtype.name not in ("uint16", "uint32") or normalizer not in NORMALIZERS:
            raise TreenetsError(f"{meta_path}: damaged meta data (level {level!r}, dtype {dtype.name!r}, normalizer "
                                f"{normalizer!r}); expected a level of {', '.join(LEVELS)}, a dtype of uint16 or "
                                f"uint32 and a normalizer of {', '.join(NORMALIZERS)}")
        vocab = read_vocabulary(folder / VOCAB, unk)
        if len(vocab) != size or eos not in vocab:
            raise TreenetsError(f"{folder / VOCAB}: {len(vocab):,} tokens, but {META} says {size:,} with {eos!r}; "
                                "the folder mixes two preparations: prepare the corpus again")
        for split, (name, tokens) in splits.items():
            path = folder / name
            expected = tokens * dtype.itemsize
            found = path.stat().st_size if path.is_file() else None
            if found != expected:
                state = "missing" if found is None else f"{found:,} bytes"
                raise TreenetsError(f"{path}: {state}, expected {expected:,} ({tokens:,} {split} tokens of "
                                    f"{dtype.name}); the file is truncated or from another preparation: prepare "
                                    "the corpus again")
        return cls(folder, meta, vocab)

    @property
    def level(self) -> str:
        return self.meta["level"]

    @property
    def normalizer(self) -> str:
        return self.meta["normalizer"]

    @property
    def eos(self) -> str:
        return self.meta["vocabulary"]["eos"]

    def check_level(self, level: str, task: str) -> None:
        """An error unless the corpus is `level` (`word`/`char`), as the task `task` reads."""
        if self.level != level:
            option = " --char" if level == "char" else ""
            raise TreenetsError(f"data.path: {self.folder} is a {self.level}-level corpus; the task {task} reads a "
                                f"{level}-level one (`treenets data prepare{option}`)")

    def _words(self, eos: str | None) -> list[str]:
        """The corpus's words in id order, its `<eos>` written `eos` where given."""
        return [eos if eos is not None and word == self.eos else word for word in self.vocab.words]

    def id_map(self, vocab: Vocab, eos: str | None = None) -> np.ndarray | None:
        """The id in `vocab` (a model's) of each of the corpus's ids, the corpus's `<eos>` read as `eos` where
        given, and the words `vocab` lacks as its `<unk>`; None where the ids are the same.

        Raises:
            TreenetsError: when `vocab` lacks a word of the corpus and has no `<unk>`.
        """
        words = self._words(eos)
        if words == vocab.words[: len(words)]:
            return None
        unk = vocab.index.get(vocab.unk) if vocab.unk is not None else None
        ids = [vocab.index.get(word, unk) for word in words]
        if None in ids:
            raise TreenetsError(f"data.path: {self.folder} holds {words[ids.index(None)]!r}, which the model's "
                                "vocabulary (without <unk>) lacks; prepare the corpus with the model's vocabulary "
                                "(`treenets data prepare --vocab MODEL/vocab.txt`)")
        return np.array(ids, dtype=np.int64)

    def unknown_tokens(self, split: str, vocab: Vocab, eos: str | None = None) -> int:
        """How many tokens of `split` are words that `vocab` (a model's) lacks, which it reads as its `<unk>` (the
        corpus's `<eos>` read as `eos` where given); the ids are read a block at a time."""
        lacking = np.array([word not in vocab for word in self._words(eos)])
        if not lacking.any():
            return 0
        ids, block = self.ids(split), 1 << 24
        return sum(int(lacking[ids[start : start + block]].sum()) for start in range(0, len(ids), block))

    def ids(self, split: str) -> np.ndarray:
        """The token ids of `split` as a read-only memory map (nothing is read until it is indexed)."""
        info = self.meta["splits"][split]
        if info["tokens"] == 0:
            return np.zeros(0, dtype=self.meta["dtype"])
        return np.memmap(self.folder / info["file"], dtype=self.meta["dtype"], mode="r")


def read_vocabulary(path: Path, unk: str | None = "<unk>") -> Vocab:
    """A vocabulary file: one token per line, in id order.

    Raises:
        TreenetsError: naming the file (and line) when it is not text, empty, or has an empty line, a token
            with white space inside, or a token twice.
    """
    text = read_text(path, "a vocabulary: one token per line")
    words = text.splitlines()
    if not words:
        raise TreenetsError(f"{path}: empty; expected a vocabulary, one token per line")
    seen: dict[str, int] = {}
    for lineno, word in enumerate(words, start=1):
        if not word or word != word.strip() or len(word.split()) != 1:
            raise TreenetsError(f"{path}:{lineno}: {word!r} is not a token; expected one token per line, without "
                                "white space")
        if word in seen:
            raise TreenetsError(f"{path}:{lineno}: {word!r} again (first on line {seen[word]}); a vocabulary lists "
                                "each token once")
        seen[word] = lineno
    return Vocab(words, unk=unk)
