"""`treenets data prepare` and training from a prepared corpus: the same tokens and ids as the Mikolov files,
the vocabulary rules, the split by hash, the same numbers in training, exact resume, and a clear line for
every bad input."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter

import numpy as np
import pytest
import torch
from helpers import tiny_config, write_corpus

import treenets
from treenets.cli import main
from treenets.config import build_config
from treenets.core import checkpoint
from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data import prepare
from treenets.data.corpus import PreparedCorpus
from treenets.data.lm import encode_stream, read_char_lm_file, read_lm_file
from treenets.data.prepare import choose_vocabulary, prepare_corpus
from treenets.workflows.training.trainer import Trainer


def _prepare(folder, out, **options):
    files = {split: folder / f"ptb.{split}.txt" for split in ("train", "valid", "test")}
    options.setdefault("progress", False)
    return prepare_corpus([files["train"]], out, valid=[files["valid"]], test=[files["test"]], **options)


def _tokens(corpus: PreparedCorpus, split: str) -> list[str]:
    return [corpus.vocab.words[i] for i in corpus.ids(split)]


@pytest.mark.slow
def test_a_prepared_ptb_reads_as_the_mikolov_files_token_for_token_and_id_for_id(data_root, tmp_path):
    words, chars = data_root / "ptb_lm", data_root / "ptb_char"
    _prepare(words, tmp_path / "words", workers=2)
    _prepare(words, tmp_path / "chars", char=True, workers=2)
    corpus = PreparedCorpus.open(tmp_path / "words")
    vocab = Vocab.from_corpus(read_lm_file(words / "ptb.train.txt"))
    assert corpus.vocab.words == vocab.words and corpus.meta["dtype"] == "uint16"
    for split in ("train", "valid", "test"):
        expected, unknown = encode_stream(read_lm_file(words / f"ptb.{split}.txt"), vocab, words)
        assert unknown == corpus.unknown_tokens(split, vocab) == 0
        assert np.array_equal(corpus.ids(split), expected), split
    # the words spelled out are Mikolov's character-level files, `< u n k >` and all
    spelled = PreparedCorpus.open(tmp_path / "chars")
    assert spelled.vocab.words == Vocab.from_corpus(read_char_lm_file(chars / "ptb.char.train.txt")).words
    for split in ("valid", "test"):
        assert _tokens(spelled, split) == [c for line in read_char_lm_file(chars / f"ptb.char.{split}.txt")
                                           for c in line], split


def test_many_chunks_on_two_processes_equal_one_chunk_in_one(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "text", lines=(400, 30, 30))
    _prepare(corpus, tmp_path / "one", workers=1)
    monkeypatch.setattr(prepare, "CHUNK_BYTES", 97)  # lines cut across reads, many chunks in flight
    _prepare(corpus, tmp_path / "two", workers=2)
    one, two = PreparedCorpus.open(tmp_path / "one"), PreparedCorpus.open(tmp_path / "two")
    assert one.vocab.words == two.vocab.words
    for split in ("train", "valid", "test"):
        assert np.array_equal(one.ids(split), two.ids(split))
    assert one.meta["sources"] == two.meta["sources"]


def test_gzip_blank_lines_and_a_byte_order_mark_read_as_plain_text(tmp_path):
    text = "\ufeffThe cat sat.\n\n  \nA dog ran.\n"
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as file:
        file.write(text)
    metas = [prepare_corpus([tmp_path / name], tmp_path / f"out-{name}", valid=[tmp_path / "a.txt"],
                            test=[tmp_path / "a.txt"], normalize="ptb", progress=False)
             for name in ("a.txt", "a.txt.gz")]
    plain, gz = (PreparedCorpus.open(tmp_path / f"out-{name}") for name in ("a.txt", "a.txt.gz"))
    assert _tokens(plain, "train") == _tokens(gz, "train") == ["the", "cat", "sat", "<eos>", "a", "dog",
                                                                "ran", "<eos>"]
    assert metas[0]["splits"]["train"]["lines"] == 2
    assert metas[1]["sources"][0]["bytes"] == (tmp_path / "a.txt.gz").stat().st_size


def test_the_vocabulary_rules():
    counts = Counter({"a": 5, "<eos>": 4, "b": 1, "c": 3, "d": 3})
    assert choose_vocabulary(counts, Counter(), None, None, None, always_unk=False)[0] == ["a", "<eos>", "b", "c", "d"]
    assert choose_vocabulary(counts, Counter(), None, None, None)[0][-1] == "<unk>"  # a word-level corpus
    assert choose_vocabulary(counts, Counter({"z": 1}), None, None, None, always_unk=False)[0][-1] == "<unk>"
    assert choose_vocabulary(counts, Counter(), None, 3, None)[0] == ["a", "<eos>", "c", "d", "<unk>"]
    # the 4 most frequent, <eos> and <unk> included; ties go to the first seen, the order stays that of the text
    words, rule = choose_vocabulary(counts, Counter(), 4, None, None)
    assert words == ["a", "<eos>", "c", "<unk>"] and "4 most frequent" in rule
    with_unk = Counter({"a": 9, "<eos>": 9, "b": 5, "c": 4, "<unk>": 1})
    assert choose_vocabulary(with_unk, Counter(), 3, None, None)[0] == ["a", "<eos>", "<unk>"]
    with pytest.raises(TreenetsError, match="too small"):
        choose_vocabulary(counts, Counter(), 1, None, None)


def test_a_given_vocabulary_keeps_its_order_and_gains_eos_and_unk(tmp_path):
    corpus = write_corpus(tmp_path / "text")
    (tmp_path / "vocab.txt").write_text("the\ncat\n")
    meta = _prepare(corpus, tmp_path / "out", vocab_file=tmp_path / "vocab.txt")
    prepared = PreparedCorpus.open(tmp_path / "out")
    assert prepared.vocab.words == ["the", "cat", "<eos>", "<unk>"]
    assert meta["splits"]["train"]["unknown"] > 0 and "vocab.txt" in meta["vocabulary"]["rule"]


def test_split_fraction_holds_out_lines_by_hash_of_the_seed(tmp_path):
    corpus = write_corpus(tmp_path / "text", lines=(2000, 1, 1))
    runs = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        meta = prepare_corpus([corpus / "ptb.train.txt"], tmp_path / name, split_fraction=0.05, seed=seed,
                              progress=False)
        runs[name] = _tokens(PreparedCorpus.open(tmp_path / name), "valid")
        lines = {split: info["lines"] for split, info in meta["splits"].items()}
        assert sum(lines.values()) == 2001 and 50 < lines["valid"] < 150 and 50 < lines["test"] < 150
    assert runs["a"] == runs["b"] != runs["c"]


@pytest.mark.parametrize("sections", [{}, {"model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2,
                                                     "nslots": 3, "nlookback": 2, "dropout": 0.2, "idropout": 0.1,
                                                     "rdropout": 0.1},
                                           "data": {"variable_bptt": False, "random_offset": True},
                                           "loss": {"ar": 0.0, "tar": 0.0}}],
                         ids=["onlstm", "prpn-random-offset"])
def test_training_from_a_prepared_corpus_gives_the_numbers_of_the_text_folder_and_resumes_exactly(tmp_path, sections):
    corpus = write_corpus(tmp_path / "text")
    _prepare(corpus, tmp_path / "prepared")

    def trainer(path, out, resume=None, steps=30):
        raw = tiny_config(path, train={"max_steps": steps})
        for section, values in sections.items():
            raw[section] = values if section == "model" else {**raw.get(section, {}), **values}
        return Trainer(build_config(raw), out, resume=resume, progress=False, log=lambda *_: None)

    text_run = trainer(corpus, tmp_path / "a").run()
    prepared_run = trainer(tmp_path / "prepared", tmp_path / "b").run()
    assert prepared_run.valid.score == text_run.valid.score
    trainer(tmp_path / "prepared", tmp_path / "c", steps=17).run()
    trainer(tmp_path / "prepared", tmp_path / "c", resume=tmp_path / "c" / "last.pt").run()
    weights = [checkpoint.load(tmp_path / run / "last.pt")["model"] for run in ("a", "b", "c")]
    for name in weights[0]:
        assert torch.equal(weights[0][name], weights[1][name]) and torch.equal(weights[1][name], weights[2][name])


def test_a_model_reads_a_corpus_prepared_with_another_vocabulary_through_its_own_ids(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "text")
    _prepare(corpus, tmp_path / "same")
    (tmp_path / "vocab.txt").write_text("dog\nzebra\nthe\n")  # zebra: a word the model never saw
    _prepare(corpus, tmp_path / "other", vocab_file=tmp_path / "vocab.txt")
    # the same text as Mikolov files, every word but dog and the written <unk>
    masked = tmp_path / "masked"
    masked.mkdir()
    for split in ("train", "valid", "test"):
        lines = (corpus / f"ptb.{split}.txt").read_text().splitlines()
        (masked / f"ptb.{split}.txt").write_text("".join(
            " ".join(word if word in ("dog", "the") else "<unk>" for word in line.split()) + "\n" for line in lines))
    raw = tiny_config(tmp_path / "same", train={"max_steps": 3})
    Trainer(build_config(raw), tmp_path / "run", progress=False, log=lambda *_: None).run()
    results = {}
    for name in ("same", "other", "masked"):
        assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test", "--corpus",
                     str(tmp_path / name)]) == 0
        results[name] = json.loads(capsys.readouterr().out.splitlines()[0])
    assert results["other"]["ppl"] == pytest.approx(results["masked"]["ppl"], rel=1e-6)
    assert results["other"]["tokens"] == results["same"]["tokens"]
    assert results["other"]["ppl"] != pytest.approx(results["same"]["ppl"])
    # Words the model lacks are counted (before: the perplexity alone), alike in Mikolov files and prepared: here
    # `zebra` for every `dog`; the corpora's own <unk> is the model's too (not counted).
    zebras = tmp_path / "zebras"
    zebras.mkdir()
    for split in ("train", "valid", "test"):
        lines = (corpus / f"ptb.{split}.txt").read_text().splitlines()
        (zebras / f"ptb.{split}.txt").write_text("".join(
            " ".join("zebra" if word == "dog" else word for word in line.split()) + "\n" for line in lines))
    _prepare(zebras, tmp_path / "zebras-prepared")
    dogs = (corpus / "ptb.test.txt").read_text().split().count("dog")
    for name in ("zebras", "zebras-prepared"):
        assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test", "--corpus",
                     str(tmp_path / name)]) == 0
        results[name] = json.loads(capsys.readouterr().out.splitlines()[0])
    assert results["zebras"]["unknown"] == results["zebras-prepared"]["unknown"] == dogs > 0
    assert results["same"]["unknown"] == results["other"]["unknown"] == results["masked"]["unknown"] == 0
    # a model of another task has no use for a corpus: one line, exit 2
    assert main(["eval", "treelstm-sick", "--split", "test", "--corpus", str(tmp_path / "same")]) == 2
    assert "--corpus is for language models" in capsys.readouterr().err


def test_a_word_level_task_refuses_a_character_corpus(tmp_path):
    corpus = write_corpus(tmp_path / "text")
    _prepare(corpus, tmp_path / "chars", char=True)
    with pytest.raises(TreenetsError, match="char-level corpus; the task lm reads a word-level one"):
        Trainer(build_config(tiny_config(tmp_path / "chars")), tmp_path / "run", progress=False)


# --- bad input: one line naming the file ------------------------------------------------------------------

def _run(capsys, *args) -> tuple[int, str]:
    try:
        code = main(["data", "prepare", "--no-progress", *map(str, args)])
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (b"", r"a\.txt: no train text"),
    (b"fine line\nbad \x00 bytes\n", r"a\.txt:2: binary data"),
    (b"fine\n\xff\xfe oops\n", r"a\.txt:2: not UTF-8"),
    (b"ok\nbell \x07 here\n", r"a\.txt:2: not text \(the control character U\+0007\)"),
    (b"a line with <eos> in it\n", r"a\.txt:1: contains <eos>"),
])
def test_bad_text_is_named_by_file_and_line(tmp_path, capsys, content, message):
    (tmp_path / "a.txt").write_bytes(content)
    (tmp_path / "b.txt").write_text("some words\n")
    code, err = _run(capsys, tmp_path / "a.txt", "--valid", tmp_path / "b.txt", "--test", tmp_path / "b.txt",
                     "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_bad_options_and_vocabularies(tmp_path, capsys):
    text = tmp_path / "a.txt"
    text.write_text("the cat sat\n" * 50)
    (tmp_path / "dup.txt").write_text("the\ncat\nthe\n")
    (tmp_path / "bad.gz").write_bytes(b"not gzip at all")
    cases = [
        (["--vocab-size", "0"], 2, "expected a positive number"),
        (["--split-fraction", "0.01", "--vocab", tmp_path / "dup.txt"], 2,
         r"dup\.txt:3: 'the' again \(first on line 1\)"),
        ([], 2, "give --valid and --test files, or --split-fraction"),
        (["--split-fraction", "0.1", "--valid", text, "--test", text], 2, "give one or the other"),
        (["--split-fraction", "0.7"], 2, "expected a fraction above 0 and below 0.5"),
        (["--split-fraction", "0.01", "--normalize", "nope"], 2, "normalizer 'nope': expected one of"),
        (["--split-fraction", "0.01", "--vocab", tmp_path / "dup.txt", "--min-count", "2"], 2, "does not combine"),
    ]
    for options, code, message in cases:
        found, err = _run(capsys, text, "--out", tmp_path / "out", *options)
        assert found == code and re.search(message, err), (options, err)
    found, err = _run(capsys, tmp_path / "bad.gz", "--split-fraction", "0.1", "--out", tmp_path / "out")
    assert found == 2 and "bad.gz: not a readable gzip file" in err


def test_the_output_folder_is_checked_and_a_corpus_is_replaced_only_when_asked(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "text")
    args = [corpus / "ptb.train.txt", "--valid", corpus / "ptb.valid.txt", "--test", corpus / "ptb.test.txt"]
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.md").write_text("mine")
    assert _run(capsys, *args, "--out", tmp_path / "busy")[1].count("holds files that are not a prepared corpus") == 1
    assert _run(capsys, *args, "--out", tmp_path / "out")[0] == 0
    code, err = _run(capsys, *args, "--out", tmp_path / "out")
    assert code == 2 and "--overwrite replaces it" in err
    assert _run(capsys, *args, "--out", tmp_path / "out", "--overwrite")[0] == 0


def test_a_damaged_or_newer_corpus_folder_gets_one_clear_line(tmp_path):
    corpus = write_corpus(tmp_path / "text")
    _prepare(corpus, tmp_path / "out")
    meta_path = tmp_path / "out" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "version": 99}))
    with pytest.raises(TreenetsError, match="format version 99, written by a newer treenets"):
        PreparedCorpus.open(tmp_path / "out")
    meta_path.write_text(json.dumps({**meta, "normalizer": "nltk"}))  # it becomes a model's normaliser
    with pytest.raises(TreenetsError, match="damaged meta data .*normalizer 'nltk'.*expected .* a normalizer of ptb"):
        PreparedCorpus.open(tmp_path / "out")
    meta_path.write_text(json.dumps(meta))
    train = tmp_path / "out" / "train.bin"
    train.write_bytes(train.read_bytes()[:-3])
    with pytest.raises(TreenetsError, match=r"train\.bin: .* bytes, expected .* truncated"):
        PreparedCorpus.open(tmp_path / "out")
    meta_path.write_text("{not json")
    with pytest.raises(TreenetsError, match=r"meta\.json:1: not JSON"):
        PreparedCorpus.open(tmp_path / "out")


def test_the_sentence_lm_reads_each_line_of_a_prepared_corpus_as_a_sentence(tmp_path):
    corpus = write_corpus(tmp_path / "text")
    _prepare(corpus, tmp_path / "prepared")
    raw = {"task": "sentence-lm", "data": {"path": str(tmp_path / "prepared"), "batch_size": 8, "eval_batch_size": 5},
           "model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3, "nlookback": 2},
           "train": {"seed": 3, "max_steps": 4, "threads": 1}}
    trainer = Trainer(build_config(raw), tmp_path / "run", progress=False, log=lambda *_: None)
    task = trainer.task
    lines = (corpus / "ptb.valid.txt").read_text().splitlines()
    assert len(task.sentences["valid"]) == len(lines)
    assert [task.vocab.words[i] for i in task.sentences["valid"][3]] == lines[3].split()
    assert task.vocab.words[-1] == "<s>" and "</s>" in task.vocab and "<eos>" not in task.vocab
    assert task.eval_units("valid") == sum(len(line.split()) + 1 for line in lines)
    assert trainer.run().valid.score > 0


def test_a_corpus_prepared_with_a_normaliser_gives_it_to_the_model_unless_the_config_names_one(tmp_path):
    corpus = write_corpus(tmp_path / "text")
    for normalize in ("lower", "none"):
        _prepare(corpus, tmp_path / normalize, normalize=normalize)
    sentence_lm = {"task": "sentence-lm", "data": {"batch_size": 8, "eval_batch_size": 5},
                   "model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3,
                             "nlookback": 2},
                   "train": {"seed": 3, "max_steps": 1, "threads": 1}}

    def trained(name: str, **data):
        raw = {**sentence_lm, "data": {**sentence_lm["data"], **data}}
        Trainer(build_config(raw), tmp_path / name, progress=False, log=lambda *_: None).run()
        return treenets.load(tmp_path / name / "best.pt")

    assert trained("lower", path=str(tmp_path / "lower")).normalizer.name == "lower"  # as the corpus was prepared
    assert trained("named", path=str(tmp_path / "lower"), normalizer="ptb").normalizer.name == "ptb"
    assert trained("none", path=str(tmp_path / "none")).normalizer.name == "treebank"  # the task's default
    saved = checkpoint.load(tmp_path / "lower" / "last.pt")
    assert saved["config"]["data"]["normalizer"] == "lower"  # what a resumed run reads


def test_the_sentence_lm_batches_sentences_of_similar_length_when_asked(tmp_path):
    # Lines of 1 to 40 words: batches drawn at random pad to nearly the longest; by length they pad little.
    lines = [" ".join(["w"] * (1 + (7 * i) % 40)) for i in range(400)]
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("\n".join(lines) + "\n")
    prepare_corpus([tmp_path / "train.txt"], tmp_path / "prepared", valid=[tmp_path / "valid.txt"],
                   test=[tmp_path / "test.txt"], progress=False)
    raw = {"task": "sentence-lm", "data": {"path": str(tmp_path / "prepared"), "batch_size": 16},
           "model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3, "nlookback": 2}}

    def padding(by_length: bool) -> tuple[float, list[int]]:
        config = build_config({**raw, "data": {**raw["data"], "by_length": by_length}})
        task = Trainer(config, tmp_path / f"run-{by_length}", progress=False, log=lambda *_: None).task
        batches = iter(task.next_batch, None)
        masks = [batch.mask for batch in batches]
        real = sum(float(mask.sum()) for mask in masks)
        return 1 - real / sum(mask.numel() for mask in masks), sorted(int(mask.sum()) for mask in masks)

    shuffled, by_length = padding(False), padding(True)
    assert sum(shuffled[1]) == sum(by_length[1]) == sum(len(line.split()) + 1 for line in lines)  # every sentence
    assert by_length[0] < 0.1 < 0.3 < shuffled[0]
    with pytest.raises(TreenetsError, match="by_length .* needs shuffle: true"):
        build_config({**raw, "data": {**raw["data"], "by_length": True, "shuffle": False}})
