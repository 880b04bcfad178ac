"""`treenets distill`: an ensemble's trees of a corpus taught to one fast parser (Shayegh et al., ICLR 2024,
"Ensemble Distillation for Unsupervised Constituency Parsing", section 3.2).

Two stages, each resumable:

1. The teachers parse the corpus (`teacher_trees`): every teacher's tree of each sentence, combined into the
   generative ensemble's tree (`treenets.trees.ensemble.combine`; one teacher: its own tree), written to
   `OUT/teachers.txt`, one bracketed tree a line over the words the teachers read, in the corpus's order (an
   empty line where no tree was found: nothing to read, or teachers that read different words). The work goes in
   chunks appended as they are done (flushed and synced): a killed run continues after the last whole chunk, and
   nothing written is parsed again. `OUT/teachers.json` records the teachers and the corpus (its size and
   sha256), so a run over another corpus or with other teachers is refused instead of mixed in. The corpus can be
   cut into shards (`--shard K/N`: the lines K of every N-th share, written to `OUT/teachers.shard-K-of-N.txt`)
   that processes (`--workers N`) or other machines parse; a run that finds every shard complete merges them into
   `OUT/teachers.txt`.
2. The student trains on those trees (`treenets train` with the `parsing` task's config, `ptb-distilled` by
   default, its `data.train` set to `OUT/teachers.txt`; run folder `OUT/run`, resumed where it holds a
   checkpoint). `treenets export OUT/run/best.pt DIR` makes it a model folder with its card.

A teacher is a model (a zoo name, a model folder, a checkpoint; REF:layer=L or REF:decode=D as in `treenets
ensemble`), an ensemble's folder or zoo name (its tree counts as one teacher's), or a file of trees over the corpus,
one a line in its order.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import write_text_atomic
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.metrics import node_spans
from treenets.trees.walk import leaves

TREES, STATE = "teachers.txt", "teachers.json"
CHUNK = 256  # sentences parsed and appended at a time (what a killed run may parse again)
DEFAULT_CONFIG = "ptb-distilled"


def corpus_lines(corpus: str, root=None) -> tuple[list[str], bool, Path]:
    """The sentences of `corpus`, one per line: `ptb` (the PTB training text the shipped PTB models read, Mikolov's:
    already their words), a folder prepared by `treenets data prepare` (its training split, a sentence per end of
    sentence), or a text file of one raw sentence a line. Returns the lines, whether they are words already
    (pretokenized: read split on white space) and the file read."""
    from treenets import data

    if corpus == "ptb":
        path = data.resolve(Path("ptb_lm"), root) / "ptb.train.txt"
        if not path.is_file():
            raise TreenetsError(f"--corpus ptb: {path} not found (`treenets data download ptb`)")
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()], True, path
    path = Path(corpus).expanduser()
    if path.is_dir():
        from treenets.data.corpus import PreparedCorpus

        prepared = PreparedCorpus.open(path)
        words = prepared.vocab.words
        ids = prepared.ids("train")
        eos = prepared.vocab.index[prepared.meta["vocabulary"]["eos"]]
        lines, current = [], []
        for i in ids.tolist():
            if i == eos:
                lines.append(" ".join(current))
                current = []
            else:
                current.append(words[i])
        if current:
            lines.append(" ".join(current))
        return lines, True, path / prepared.meta["splits"]["train"]["file"]
    if not path.is_file():
        raise TreenetsError(f"--corpus {corpus}: no such file or folder (expected ptb, a text of one sentence a "
                            "line, or a folder prepared by `treenets data prepare`)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TreenetsError(f"--corpus {path}: not UTF-8 text (byte {exc.start})") from None
    return text.splitlines(), False, path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Teachers:
    """The teachers of a distillation, loaded: `trees(lines, first)` gives the ensemble tree of each line (a nested
    list over the words read, or None)."""

    def __init__(self, refs: list[str], pretokenized: bool, device="cpu", weights: list[float] | None = None,
                 mode: str = "generative", corpus_size: int | None = None):
        from treenets.predictors.base import Predictor
        from treenets.predictors.ensemble import EnsembleParser, Member, ensemble_definition
        from treenets.workflows.parse_eval import system_kind
        from treenets.zoo.model_folder import ensemble_folder

        if len(refs) > 1:
            members, self.weights, self.mode = ensemble_definition(refs, weights, mode, "distill", "--weights")
        else:
            members, self.weights, self.mode = [Member.read(refs[0], "distill")], [1.0], mode
        self.pretokenized, self.systems = pretokenized, []
        for member in members:
            if system_kind(member.ref) == "trees":
                lines = Path(member.ref).read_text(encoding="utf-8").splitlines()
                if corpus_size is not None and len(lines) != corpus_size:
                    raise TreenetsError(f"{member.ref}: {len(lines)} lines for a corpus of {corpus_size} (a teacher's "
                                        "file holds one tree a line over the corpus, in its order; empty: none)")
                self.systems.append((str(member), None, lines, member))
                continue
            folder = ensemble_folder(member.ref)
            model = EnsembleParser.from_folder(folder, device) if folder else Predictor.load(member.ref, device=device)
            if not getattr(model, "induces_trees", False):
                raise TreenetsError(f"{member.ref}: a {model.config.task} model induces no trees: it cannot teach")
            self.systems.append((str(member), model, None, member))

    @property
    def names(self) -> list[str]:
        return [name for name, _, _, _ in self.systems]

    def trees(self, lines: list[str], first: int) -> list[list | None]:
        """The ensemble tree of each of `lines` (the corpus's lines from number `first`, 0-based), over the words the
        teachers read; None where there is nothing to read or the teachers read different words."""
        from treenets.trees.formats import can_be_labelled, tokens_of, tree_of

        found = []  # per teacher: per line (words, tree over positions) or None
        for name, model, file_lines, member in self.systems:
            if model is None:
                own = []
                for k in range(len(lines)):
                    text = file_lines[first + k].strip()
                    if not text:
                        own.append(None)
                        continue
                    tokens = tokens_of(text, f"{name}:{first + k + 1}")
                    tree = tree_of(tokens, can_be_labelled(tokens))
                    own.append(_over_positions(tree))
                found.append(own)
                continue
            readable = [k for k, line in enumerate(lines) if _reads(model, line, self.pretokenized)]
            options = {"decode": member.decode} if member.decode else {}
            parses = model.parse([lines[k] for k in readable], member.layer, "official", 64, self.pretokenized,
                                 **options) if readable else []
            own = [None] * len(lines)
            for k, parse in zip(readable, parses):
                own[k] = (list(parse.words), _over_positions(parse.nested)[1])
            found.append(own)
        result = []
        for k in range(len(lines)):
            mine = [teacher[k] for teacher in found]
            words = next((m[0] for m in mine if m is not None), None)
            if words is None or len(words) < 2 or any(m is not None and m[0] != words for m in mine):
                result.append(None)  # nothing read, or teachers that read different words
                continue
            trees = [m[1] if m is not None else None for m in mine]
            tree, _ = combine(list(range(len(words))), trees, self.weights, self.mode)
            result.append(None if tree is None else _with_words(tree, words))
        return result


def _reads(model, line: str, pretokenized: bool) -> bool:
    """Whether `model` reads at least one word of `line` (a line with none has no tree)."""
    try:
        return bool(model.read(line, pretokenized))
    except TreenetsError:
        return False


def _over_positions(tree) -> tuple[list[str], list | int]:
    """A tree over words as (its words, the same tree over positions 0..n-1)."""
    words = leaves(tree) if isinstance(tree, list) else [tree]
    spans = sorted(span for span in node_spans(tree)[0] if span[1] - span[0] >= 2)
    return list(words), nested_from_spans(list(range(len(words))), spans)


def _with_words(tree, words: list[str]):
    return [_with_words(child, words) for child in tree] if isinstance(tree, list) else words[tree]


def _complete_lines(path: Path) -> int:
    """How many whole lines `path` holds, after cutting a torn last line (a run killed while appending)."""
    if not path.is_file():
        return 0
    raw = path.read_bytes()
    whole = raw.rfind(b"\n") + 1
    if whole < len(raw):
        with path.open("r+b") as handle:
            handle.truncate(whole)
    return raw.count(b"\n", 0, whole)


def shard_range(size: int, shard: int, shards: int) -> tuple[int, int]:
    """The lines [start, stop) of shard `shard` (0-based) of `shards` over a corpus of `size` lines."""
    return size * shard // shards, size * (shard + 1) // shards


def _check_state(out: Path, record: dict, overwrite: bool) -> None:
    """Refuse teachers' trees written for other teachers or another corpus (unless `overwrite`: start again)."""
    state = out / STATE
    if state.is_file():
        try:
            previous = json.loads(state.read_text())
        except ValueError:
            previous = None
        if previous != record:
            if not overwrite:
                raise TreenetsError(f"{state}: the teachers' trees in {out} were written for "
                                    f"{_describe(previous)}, not {_describe(record)} (--overwrite starts again; or "
                                    "another --out)")
            for path in out.glob("teachers*.txt"):
                path.unlink()
    write_text_atomic(state, json.dumps(record, indent=1) + "\n")


def _describe(record) -> str:
    if not isinstance(record, dict):
        return "something else (an unreadable record)"
    return (f"teachers {' '.join(record.get('teachers', []))} over {record.get('corpus')} ({record.get('lines')} "
            "lines)")


def teacher_trees(refs: list[str], corpus: str, out: Path, shard: tuple[int, int] | None = None, workers: int = 1,
                  pretokenized: bool | None = None, weights: list[float] | None = None, mode: str = "generative",
                  device="cpu", root=None, overwrite: bool = False, threads: int | None = None) -> Path | None:
    """Stage 1: the teachers' trees of `corpus` in `out/teachers.txt` (see the module's docstring), or with `shard`
    (K, N) only shard K's (0-based) in its own file. Returns the trees' file, or None where shards are still
    missing (`workers` > 1 parses them in that many processes first)."""
    lines, words_given, path = corpus_lines(corpus, root)
    pretokenized = words_given if pretokenized is None else pretokenized
    if not lines:
        raise TreenetsError(f"--corpus {corpus}: no line to parse")
    if out.exists() and not out.is_dir():
        raise TreenetsError(f"--out {out}: a file" + (" (the --corpus)" if out.resolve() == path.resolve() else "") +
                            "; expected the distillation's folder (new, or one an earlier run wrote)")
    out.mkdir(parents=True, exist_ok=True)
    record = {"teachers": list(refs), "weights": weights, "mode": mode, "corpus": str(path), "lines": len(lines),
              "sha256": _sha256(path), "pretokenized": pretokenized}
    _check_state(out, record, overwrite)
    final = out / TREES
    if shard is None and _complete_lines(final) == len(lines):
        note(f"distill: the teachers' trees of all {len(lines):,} lines are in {final} (reused)")
        return final
    if shard is None and workers > 1:
        _run_workers(refs, corpus, out, workers, pretokenized, weights, mode, device, root, threads)
        return _merge_shards(out, len(lines), workers)
    if shard is None and (shards := find_shards(out)):  # shards parsed elsewhere: merged once all are there
        return _merge_shards(out, len(lines), shards)
    if shard is None:
        start, stop, target = 0, len(lines), final
    else:
        start, stop = shard_range(len(lines), *shard)
        target = out / f"teachers.shard-{shard[0] + 1}-of-{shard[1]}.txt"
    done = _complete_lines(target)
    if done >= stop - start:
        note(f"distill: {target} holds its {stop - start:,} lines (reused)")
        return target if shard is not None else final
    if done:
        note(f"distill: {target} holds {done:,} of its {stop - start:,} lines: continuing after them")
    teachers = Teachers(refs, pretokenized, device, weights, mode, len(lines))
    begin = time.perf_counter()
    with target.open("a", encoding="utf-8") as handle:
        for first in range(start + done, stop, CHUNK):
            chunk = lines[first : min(stop, first + CHUNK)]
            trees = teachers.trees(chunk, first)
            handle.write("".join((bracketed(tree) if tree is not None else "") + "\n" for tree in trees))
            handle.flush()
            os.fsync(handle.fileno())
            written = first + len(chunk) - start
            rate = (written - done) / max(time.perf_counter() - begin, 1e-9)
            note(f"distill: {written:,} of {stop - start:,} lines parsed by the teachers ({rate:.1f} sentences/s)")
    with target.open(encoding="utf-8") as handle:  # (the whole file's: a resumed run's earlier lines too)
        missing = sum(not line.strip() for line in handle)
    if missing:
        note(f"distill: {missing:,} of its {stop - start:,} lines without a tree (nothing to read, one word, or "
             "teachers that read different words): empty lines")
    if shard is not None:
        return target
    return final


def _run_workers(refs, corpus, out, workers, pretokenized, weights, mode, device, root, threads) -> None:
    """Parse the `workers` shards in as many processes (`treenets distill ... --shard K/N --teachers-only`)."""
    command = [sys.executable, "-m", "treenets", "distill", *refs, "--corpus", corpus, "--out", str(out),
               "--teachers-only", "--device", str(device), "--mode", mode, "--threads", str(threads or 1)]
    if weights is not None:
        command += ["--weights", ",".join(str(w) for w in weights)]
    if root is not None:
        command += ["--data", str(root)]
    if pretokenized:
        command += ["--pretokenized"]
    note(f"distill: the teachers parse {workers} shards in {workers} processes")
    processes = [subprocess.Popen([*command, "--shard", f"{k + 1}/{workers}"]) for k in range(workers)]
    failed = [k + 1 for k, p in enumerate(processes) if p.wait() != 0]
    if failed:
        raise TreenetsError(f"distill: shard(s) {', '.join(map(str, failed))} of {workers} failed (see above); run "
                            "again to continue them")


def _merge_shards(out: Path, size: int, shards: int) -> Path | None:
    """`out/teachers.txt` from the shards' files where all are complete, else None (saying which are missing)."""
    parts = [out / f"teachers.shard-{k + 1}-of-{shards}.txt" for k in range(shards)]
    missing = [p.name for k, p in enumerate(parts)
               if _complete_lines(p) != shard_range(size, k, shards)[1] - shard_range(size, k, shards)[0]]
    if missing:
        note(f"distill: waiting for {', '.join(missing)} (complete shards are merged when all are there)")
        return None
    final = out / TREES
    write_text_atomic(final, "".join(p.read_text(encoding="utf-8") for p in parts))
    for part in parts:
        part.unlink()
    note(f"distill: {shards} shards merged into {final}")
    return final


def find_shards(out: Path) -> int | None:
    """The number of shards the files in `out` were cut into, if any."""
    for path in sorted(out.glob("teachers.shard-*-of-*.txt")):
        return int(path.stem.rsplit("-of-", 1)[1])
    return None


def distill(refs: list[str], corpus: str, out: str, config: str | None = None, overrides: list[str] = (),
            shard: tuple[int, int] | None = None, workers: int = 1, teachers_only: bool = False,
            pretokenized: bool | None = None, weights: list[float] | None = None, mode: str = "generative",
            device="cpu", root=None, overwrite: bool = False, threads: int | None = None,
            progress: bool = True) -> int:
    """`treenets distill`: stage 1 (`teacher_trees`), then stage 2, the student's training in `out/run` (resumed
    where it holds a checkpoint). Returns the exit status."""
    from treenets.workflows.train import run_training

    folder = Path(out)
    trees = teacher_trees(refs, corpus, folder, shard, workers, pretokenized, weights, mode, device, root, overwrite,
                          threads)
    if shard is not None or teachers_only or trees is None:
        return 0
    run = folder / "run"
    settings = [f"data.train={trees}", *overrides]  # (the path as given: the run's config reads as the command)
    if threads is not None:
        settings.append(f"train.threads={threads}")
    resume = str(run / "last.pt") if (run / "last.pt").is_file() and not overwrite else None
    note(f"distill: the student trains on {trees} in {run}" + (" (resumed)" if resume is not None else ""))
    status = run_training(None if resume is not None else (config or DEFAULT_CONFIG), settings if resume is None
                          else [s for s in settings if not s.startswith("data.train=")], str(run), resume,
                          overwrite, root, progress=progress)
    if status == 0:
        note(f"distill: export the student with `treenets export {run / 'best.pt'} DIR`")
    return status
