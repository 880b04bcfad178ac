"""`treenets data prepare`: raw or tokenised text into a prepared corpus (`treenets.data.corpus`), streaming.

Two passes over the text, each on every core, neither holding the corpus as Python objects:

1. read: the source files are cut into chunks of whole lines (`.gz` is read as it is decompressed, and each
   file's sha256 taken on the way); worker processes check each chunk (UTF-8, no NUL or control characters),
   normalise every line into tokens (`treenets.text`: `ptb`, `lower`, `none`, ...; spelled out with `--char`),
   count the training tokens, and hand back the tokens as text, which is written to a temporary file per
   split. With `split_fraction`, each line goes to valid or test with that probability by a hash of `seed`
   and its place in the sources (the same split for the same text on every machine).
2. encode: the vocabulary is chosen from the counts (every training token, `min_count`, `vocab_size`, or a
   given file), and workers turn the temporary files' tokens into ids, written as the split's id file.

The meta data is written last: a folder without `meta.json` is an unfinished preparation, which the next run
replaces. Lines with no token (blank lines between paragraphs) are skipped; every other line is followed by
`<eos>`, so a prepared PTB reads exactly as the Mikolov files do (`treenets.data.lm`).
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import hashlib
import multiprocessing
import os
import re
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from treenets.core.errors import TreenetsError
from treenets.core.files import json_text, output_folder
from treenets.core.version import __version__
from treenets.data.corpus import FORMAT, META, SPLITS, VERSION, VOCAB, id_dtype, read_vocabulary
from treenets.text import get_normalizer

EOS, UNK, WORD_BOUNDARY = "<eos>", "<unk>", "_"
CHUNK_BYTES = 1 << 20  # lines are handed to the workers about a megabyte at a time
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Source:
    """A text file and the split its lines go to ("train", "valid", "test", or "fraction": split by hash)."""

    path: Path
    split: str


@dataclass(frozen=True)
class _Reading:
    """What a chunk's worker needs besides the chunk."""

    normalizer: str
    char: bool
    split_fraction: float
    seed: int


class _HashingReader:
    """A binary file whose bytes are hashed (sha256) and counted as they are read."""

    def __init__(self, file):
        self.file, self.digest, self.size = file, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


class _SourceChunks:
    """A source file in chunks of whole lines: iterating gives (the number of the chunk's first line, its bytes,
    the file's bytes read so far); `.gz` files are decompressed on the way. Once iterated, `sha256` and `size`
    are the file's (as stored: compressed for `.gz`)."""

    def __init__(self, path: Path):
        self.path, self.sha256, self.size = path, None, 0

    def __iter__(self):
        try:
            raw = self.path.open("rb")
        except OSError as exc:
            raise TreenetsError(f"{self.path}: cannot read ({exc.strerror}; expected a text file)") from None
        with raw:
            hashed = _HashingReader(raw)
            stream = gzip.GzipFile(fileobj=hashed) if self.path.name.endswith(".gz") else hashed
            lineno, pending = 1, b""
            while True:
                try:
                    block = stream.read(CHUNK_BYTES)
                except (OSError, EOFError, zlib.error) as exc:
                    raise TreenetsError(f"{self.path}: not a readable gzip file ({exc}); expected text, or text "
                                        "compressed with gzip (.gz)") from None
                if not block:
                    break
                block = pending + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    pending = block
                    continue
                pending = block[cut:]
                yield lineno, block[:cut], hashed.size
                lineno += block.count(b"\n", 0, cut)
            if pending:
                yield lineno, pending, hashed.size
            self.sha256, self.size = hashed.digest.hexdigest(), hashed.size


def _split_of(line_key: str, seed: int, fraction: float) -> str:
    """The split of a line under `split_fraction`: valid or test with probability `fraction` each."""
    draw = zlib.crc32(f"{seed}:{line_key}".encode()) / 2**32
    return "valid" if draw < fraction else "test" if draw < 2 * fraction else "train"


def _tokens(text: str, normalize, char: bool) -> list[str]:
    words = normalize(text)
    return list(WORD_BOUNDARY.join(words)) if char and words else words


def _read_chunk(job) -> tuple[int, dict[str, tuple[str, Counter, int]]]:
    """A chunk of lines -> (its end in the file, for progress; per split: its lines' tokens as text (`<eos>` after
    each line), the token counts, and the number of lines kept)."""
    path, source_index, split, lineno, data, position, reading = job
    if b"\0" in data:
        line = lineno + data[: data.index(b"\0")].count(b"\n")
        raise TreenetsError(f"{path}:{line}: binary data (a NUL byte); expected text, one sentence or document per "
                            "line")
    try:
        text = data.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        line = lineno + data[: exc.start].count(b"\n")
        raise TreenetsError(f"{path}:{line}: not UTF-8 text ({exc.reason}); expected text, one sentence or "
                            "document per line") from None
    bad = _CONTROL.search(text)
    if bad:
        line = lineno + text[: bad.start()].count("\n")
        raise TreenetsError(f"{path}:{line}: not text (the control character U+{ord(bad.group()):04X}); expected "
                            "text, one sentence or document per line")
    normalize = get_normalizer(reading.normalizer)
    out: dict[str, tuple[list[str], Counter, int]] = {}
    for offset, line in enumerate(text.splitlines()):
        tokens = _tokens(line, normalize, reading.char)
        if not tokens:
            continue
        if EOS in tokens:
            raise TreenetsError(f"{path}:{lineno + offset}: contains {EOS}, which prepare appends to every line "
                                "itself")
        target = split if split != "fraction" else _split_of(f"{source_index}:{lineno + offset}", reading.seed,
                                                              reading.split_fraction)
        lines, counts, kept = out.setdefault(target, ([], Counter(), 0))
        tokens.append(EOS)
        counts.update(tokens)
        lines.append(" ".join(tokens))
        out[target] = (lines, counts, kept + 1)
    return position, {target: ("\n".join(lines) + "\n", counts, kept) for target, (lines, counts, kept) in out.items()}


_index: dict[str, int] = {}  # the vocabulary of the encoding pass, in each worker (set by `_set_index`)


def _set_index(index: dict[str, int]) -> None:
    global _index
    _index = index


def _encode_chunk(job) -> tuple[bytes, int]:
    """Tokens as text -> (their ids as `dtype` bytes, how many were not in the vocabulary)."""
    data, dtype, unk_id = job
    get = _index.get
    ids = np.fromiter((get(token, -1) for token in data.split()), dtype=np.int64)
    unknown = ids < 0
    ids[unknown] = unk_id
    return ids.astype(dtype).tobytes(), int(unknown.sum())


def _ordered(pool, function, jobs, ahead: int):
    """`function` over `jobs` in order, on `pool` (None: in this process), at most `ahead` jobs in flight, so that
    reading the input never runs ahead of the workers by more than that (`Pool.imap` would read it all)."""
    if pool is None:
        yield from map(function, jobs)
        return
    pending = collections.deque()
    for job in jobs:
        pending.append(pool.apply_async(function, (job,)))
        if len(pending) >= ahead:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def choose_vocabulary(counts: Counter, held_out: Counter, vocab_size: int | None, min_count: int | None,
                      vocab_file: Path | None, always_unk: bool = True) -> tuple[list[str], str]:
    """The vocabulary in id order and the rule that chose it, in words.

    Every training token in order of first appearance (the order of the official AWD-LSTM dictionary, so a
    prepared PTB gets the same ids as the Mikolov files), less those seen fewer than `min_count` times, less all
    but the `vocab_size` most frequent (ties: the first seen), or the tokens of `vocab_file` in its order.
    `<eos>` is always in it; `<unk>` is added (last) when some training or held-out token is left out, or
    `always_unk` (a word-level model meets words outside any vocabulary; a character-level one only where its
    corpus has them).
    """
    if vocab_file is not None:
        words = read_vocabulary(vocab_file).words
        rule = f"the file {vocab_file}"
        words += [token for token in (EOS, UNK) if token not in words]
        return words, rule
    kept = [word for word, count in counts.items() if count >= (min_count or 1) or word == EOS]
    rule = f"tokens seen at least {min_count} times in training" if min_count else "every training token"
    needs_unk = always_unk or len(kept) < len(counts) or any(word not in counts for word in held_out)
    if vocab_size is not None:
        if vocab_size < 2:
            raise TreenetsError(f"--vocab-size {vocab_size}: too small; a vocabulary holds at least {EOS} and {UNK}")
        if len(kept) + (needs_unk and UNK not in kept) > vocab_size:
            # <eos> first, then by count (a stable sort: ties go to the first seen); <unk> takes the last place
            ranked = sorted((word for word in kept if word != UNK), key=lambda word: (word != EOS, -counts[word]))
            chosen = set(ranked[: vocab_size - 1])
            kept = [word for word in kept if word in chosen]
            needs_unk = True
            rule = f"the {vocab_size:,} most frequent training tokens" + (f" seen at least {min_count} times"
                                                                          if min_count else "")
    if needs_unk and UNK not in kept:
        kept.append(UNK)
    return kept, rule


def _workers(requested: int | None) -> int:
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(requested or available, available))


def prepare_corpus(train: list[Path], out: Path, valid: list[Path] = (), test: list[Path] = (),
                   split_fraction: float | None = None, seed: int = 1, vocab_size: int | None = None,
                   min_count: int | None = None, vocab_file: Path | None = None, normalize: str = "none",
                   char: bool = False, workers: int | None = None, overwrite: bool = False,
                   progress: bool = True) -> dict:
    """Prepare a corpus folder `out` from text files; its meta data (also in `out/meta.json`).

    Args:
        train, valid, test: text files (`.gz` too), one sentence or document per line; without `valid`/`test`,
            `split_fraction` of the training lines go to each.
        split_fraction: the share of training lines held out for validation, and the same for test.
        seed: the seed of that split.
        vocab_size: the vocabulary's size at most, `<eos>` and `<unk>` included.
        min_count: training tokens seen fewer times are read as `<unk>`.
        vocab_file: a given vocabulary (one token per line), e.g. the Wikipedia LM's 50k; excludes the two above.
        normalize: a normaliser of `treenets.text` (`none`: tokens as they are, split on white space).
        char: a character-level corpus: each word spelled out, `_` between words (as Mikolov's `ptb.char`).
        workers: processes (None: every core this process may use).
        overwrite: replace a prepared corpus in `out` (an unfinished one is always replaced).
        progress: progress bars (tokens/s) on stderr.

    Raises:
        TreenetsError: naming the file (and line) for what cannot be read as text, a missing split, a vocabulary
            file with duplicates, a split with no token, an `out` that holds other files or (without `overwrite`)
            a prepared corpus.
    """
    get_normalizer(normalize)
    if vocab_file is not None and (vocab_size is not None or min_count is not None):
        raise TreenetsError("--vocab gives the vocabulary: it does not combine with --vocab-size or --min-count")
    if bool(valid) != bool(test):
        raise TreenetsError("give both --valid and --test, or neither (then --split-fraction holds lines out of the "
                            "training text)")
    if valid and split_fraction is not None:
        raise TreenetsError("--split-fraction holds lines out of the training text; with --valid and --test files "
                            "it has nothing to do: give one or the other")
    if not valid and not split_fraction:
        raise TreenetsError("no validation and test text: give --valid and --test files, or --split-fraction F to "
                            "hold out a fraction F of the training lines for each")
    if split_fraction is not None and not 0 < split_fraction < 0.5:
        raise TreenetsError(f"--split-fraction {split_fraction}: expected a fraction above 0 and below 0.5")
    if vocab_file is not None:
        read_vocabulary(vocab_file)  # its errors before an hour of reading
    sources = ([Source(Path(p), "train" if valid else "fraction") for p in train]
               + [Source(Path(p), "valid") for p in valid] + [Source(Path(p), "test") for p in test])
    for source in sources:
        if not source.path.is_file():
            raise TreenetsError(f"{source.path}: {'a folder' if source.path.is_dir() else 'does not exist'} "
                                "(expected a text file, one sentence or document per line)")
    out = _output_folder(Path(out), overwrite)
    count = _workers(workers)
    reading = _Reading(normalize, char, split_fraction or 0.0, seed)
    started = time.perf_counter()
    with _pool(count) as pool:
        counts, held_out, lines, digests = _read_sources(sources, out, reading, pool, count, progress)
    words, rule = choose_vocabulary(counts["train"], held_out, vocab_size, min_count, vocab_file, always_unk=not char)
    dtype = id_dtype(len(words))
    totals = {split: counts[split].total() for split in SPLITS}
    for split in SPLITS:
        if totals[split] == 0:
            files = ", ".join(str(source.path) for source in sources if source.split in (split, "fraction"))
            hint = " held out: a larger --split-fraction, or a longer text" if split_fraction else ""
            raise TreenetsError(f"{files}: no {split} text (no line with a token{hint})")
    index = {word: i for i, word in enumerate(words)}
    unknown = {}
    with _pool(count, index) as pool, tqdm(total=sum(totals.values()), unit="tok", unit_scale=True,
                                           desc="prepare: encoding", disable=not progress or None, leave=False) as bar:
        for split in SPLITS:
            unknown[split] = _encode_split(out, split, dtype, index.get(UNK, -1), pool, count, bar)
    (out / VOCAB).write_text("".join(word + "\n" for word in words), encoding="utf-8")
    seconds = time.perf_counter() - started
    meta = {
        "format": FORMAT, "version": VERSION, "level": "char" if char else "word", "dtype": dtype,
        "normalizer": normalize,
        "vocabulary": {"rule": rule, "size": len(words), "unk": UNK if UNK in index else None, "eos": EOS},
        "splits": {split: {"file": f"{split}.bin", "tokens": totals[split], "lines": lines[split],
                           "unknown": unknown[split]} for split in SPLITS},
        "sources": [{"path": str(source.path), "split": "train+valid+test" if source.split == "fraction"
                     else source.split, "bytes": size, "sha256": digest}
                    for source, (digest, size) in zip(sources, digests)],
        "split_fraction": split_fraction, "seed": seed if split_fraction else None,
        "seconds": round(seconds, 1), "workers": count, "treenets": __version__,
    }
    temporary = out / (META + ".tmp")
    temporary.write_text(json_text(meta, indent=1) + "\n")
    temporary.replace(out / META)
    return meta


def _output_folder(out: Path, overwrite: bool) -> Path:
    """`out`, made and emptied of an earlier preparation; an error if it holds a corpus (without `overwrite`) or
    files that are not a corpus's."""
    ours = {META, VOCAB, META + ".tmp"} | {f"{split}{suffix}" for split in SPLITS
                                           for suffix in (".bin", ".bin.tmp", ".tokens.tmp")}
    if out.is_dir():
        others = sorted(path.name for path in out.iterdir() if path.name not in ours)
        if others:
            raise TreenetsError(f"--out {out}: holds files that are not a prepared corpus ({', '.join(others[:3])}"
                                f"{', ...' if len(others) > 3 else ''}); give a new or empty folder")
        if (out / META).exists() and not overwrite:
            raise TreenetsError(f"--out {out}: holds a prepared corpus; --overwrite replaces it")
    output_folder(out, "--out")
    (out / META).unlink(missing_ok=True)  # from here on the folder is an unfinished preparation
    return out


def summary(meta: dict, out) -> str:
    """What a preparation wrote, in a few lines (its speed: `speed`)."""
    splits = ", ".join(f"{split} {info['tokens']:,} tokens ({info['lines']:,} lines, {info['unknown']:,} <unk>)"
                       for split, info in meta["splits"].items())
    vocabulary = meta["vocabulary"]
    return (f"prepared {out}: {meta['level']}-level, normaliser {meta['normalizer']}; {splits}\n"
            f"vocabulary: {vocabulary['size']:,} tokens ({vocabulary['rule']}); ids as {meta['dtype']}\n"
            f"train with data.path: {out}")


def speed(meta: dict) -> str:
    """How fast a preparation ran, a note beside its `summary`."""
    tokens = sum(info["tokens"] for info in meta["splits"].values())
    return (f"prepare: {tokens:,} tokens in {meta['seconds']:.1f} s ({tokens / max(meta['seconds'], 1e-9):,.0f} "
            f"tokens/s, {meta['workers']} process(es))")


@contextlib.contextmanager
def _pool(count: int, index: dict[str, int] | None = None):
    """`count` worker processes (None for one: the work runs in this process), each holding the vocabulary
    `index` for the encoding pass. Forked where the system can, so that workers start at once."""
    _set_index(index or {})
    if count == 1:
        yield None
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with context.Pool(count, initializer=_set_index, initargs=(index or {},)) as pool:
        yield pool


def _read_sources(sources, out: Path, reading: _Reading, pool, count: int, progress: bool):
    """Pass 1: every source read and normalised into the splits' temporary token files. Returns the token
    counts per split, the held-out tokens (valid and test), the lines per split and each source's (sha256,
    bytes)."""
    counts = {split: Counter() for split in SPLITS}
    lines = dict.fromkeys(SPLITS, 0)
    files = {split: (out / f"{split}.tokens.tmp").open("w", encoding="utf-8") for split in SPLITS}
    digests = []
    total_bytes = sum(source.path.stat().st_size for source in sources)
    started = time.perf_counter()
    try:
        with tqdm(total=total_bytes, unit="B", unit_scale=True, desc="prepare: reading",
                  disable=not progress or None, leave=False) as bar:
            done = tokens = 0
            for source_index, source in enumerate(sources):
                chunks = _SourceChunks(source.path)
                jobs = ((str(source.path), source_index, source.split, lineno, data, position, reading)
                        for lineno, data, position in chunks)
                for position, result in _ordered(pool, _read_chunk, jobs, 2 * count):
                    for split, (text, split_counts, kept) in result.items():
                        files[split].write(text)
                        counts[split].update(split_counts)
                        lines[split] += kept
                        tokens += split_counts.total()
                    bar.set_postfix_str(f"{tokens / (time.perf_counter() - started):,.0f} tokens/s", refresh=False)
                    bar.update(done + position - bar.n)
                digests.append((chunks.sha256, chunks.size))
                done += chunks.size
    finally:
        for file in files.values():
            file.close()
    held_out = counts["valid"] + counts["test"]
    return counts, held_out, lines, digests


def _encode_split(out: Path, split: str, dtype: str, unk_id: int, pool, count: int, bar) -> int:
    """Pass 2: a split's temporary token file into its id file; the tokens that were not in the vocabulary."""
    tokens_path, ids_path = out / f"{split}.tokens.tmp", out / f"{split}.bin.tmp"
    unknown = 0

    def jobs():
        with tokens_path.open("r", encoding="utf-8") as file:
            while True:
                data = file.read(CHUNK_BYTES)
                if not data:
                    return
                data += file.readline()  # whole lines: a token is never cut in two
                yield data, dtype, unk_id

    with ids_path.open("wb") as file:
        for ids, missing in _ordered(pool, _encode_chunk, jobs(), 2 * count):
            file.write(ids)
            unknown += missing
            bar.update(len(ids) // np.dtype(dtype).itemsize)
    ids_path.replace(out / f"{split}.bin")
    tokens_path.unlink()
    return unknown
