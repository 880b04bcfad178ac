"""The character-level language-model task (`char-lm`): bits per character by hand, the task's reading and
splitting of text, and the command line end to end on a tiny character corpus (train, eval, parse, and
parse-eval refused)."""

from __future__ import annotations

import json
import math
import random

import nltk
import pytest
import torch
import yaml
from helpers import WORDS, tiny_config, write_corpus

import treenets
from treenets.cli import main
from treenets.config import build_config
from treenets.data.lm import EOS
from treenets.tasks import task_class
from treenets.tasks.metrics import BitsPerCharacter

PRPN = {"name": "prpn", "emb_size": 8, "hidden_size": 12, "num_layers": 2, "nslots": 5, "nlookback": 3,
        "dropout": 0.0, "idropout": 0.1, "rdropout": 0.1, "tie_weights": False, "res": 1}


def write_char_corpus(folder, seed: int = 0, lines=(300, 40, 40)):
    """ptb.char.{train,valid,test}.txt written as Mikolov's files are (shared/data/README.md, section 8):
    words joined by `_`, lines by line breaks, every character followed by a space; random sentences of the
    tiny word list, whose every word is in the training file."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in zip(("train", "valid", "test"), lines):
        sentences = [[rng.choice(WORDS) for _ in range(rng.randint(3, 12))] for _ in range(count)]
        if split == "train":
            sentences.append(WORDS)
        text = "\n".join("_".join(words) for words in sentences) + "\n"
        (folder / f"ptb.char.{split}.txt").write_text("".join(c + " " for c in text))
    return folder


def char_config(corpus, model: dict | None = None, **sections) -> dict:
    """The tiny ON-LSTM config of the word-level tests (or `model`) as a character-level one on `corpus`."""
    config = tiny_config(corpus, **sections)
    config["task"] = "char-lm"
    if model is not None:
        config["model"] = model
    return config


def test_bits_per_character_by_hand():
    metric = BitsPerCharacter()
    metric.add(torch.tensor(6.0), 3)  # two batches: 8 nats over 4 characters
    metric.add(torch.tensor(2.0), 1)
    values = metric.values()
    assert values == {"loss": 2.0, "bpc": pytest.approx(2.0 / math.log(2)), "ppl": pytest.approx(math.exp(2.0)),
                      "characters": 4}
    assert values["bpc"] == pytest.approx(2.8853900817779268, abs=1e-12)
    assert metric.score == values["bpc"] and metric.loss == 2.0 and BitsPerCharacter.key == "bpc"
    coin = BitsPerCharacter()  # a fair coin per character: exactly one bit
    coin.add(torch.tensor(5 * math.log(2), dtype=torch.float64), 5)
    assert coin.values()["bpc"] == pytest.approx(1.0, abs=1e-12)
    assert coin > metric and not metric > coin  # lower is better
    assert BitsPerCharacter.improves(1.2, 1.3) and not BitsPerCharacter.improves(1.4, 1.3)


def test_the_task_declares_characters():
    config = build_config({"task": "char-lm"})
    assert (config.data.path, config.data.train, config.data.valid, config.data.test) == (
        "ptb_char", "ptb.char.train.txt", "ptb.char.valid.txt", "ptb.char.test.txt")
    task = task_class("char-lm")
    assert task.Metric is BitsPerCharacter and task.units == "characters" and task.token_unit == "character"
    assert task.split_words(["the", "cat"]) == ["t", "h", "e", "_", "c", "a", "t"]
    assert task_class("lm").split_words(["the", "cat"]) == ["the", "cat"] and task_class("lm").token_unit == "word"


def test_the_task_reads_a_character_stream(tmp_path):
    corpus = write_char_corpus(tmp_path / "chars")
    config = build_config(char_config(corpus))
    task = task_class("char-lm")(config, splits=("train", "test"))
    lines = (corpus / "ptb.char.test.txt").read_text().split("\n")[:-1]  # the last piece is the lone space
    assert len(lines) == 40
    assert len(task.vocab) == len(set("".join(WORDS)) | {"_"}) + 1 and task.vocab.unk is None
    stream = task.streams["test"]
    assert len(stream) == sum(len(line.split()) + 1 for line in lines)
    first = lines[0].split() + [EOS]
    assert [task.vocab.words[i] for i in stream[: len(first)].tolist()] == first


def test_a_word_level_corpus_given_as_characters_exits_2(tmp_path, capsys):
    words = write_corpus(tmp_path / "words")
    config = tmp_path / "config.yaml"
    data = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}
    config.write_text(yaml.safe_dump(char_config(words, data=data)))
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    first = (words / "ptb.train.txt").read_text().split()[0]
    assert err == (f"treenets: error: {words / 'ptb.train.txt'}:1: token {first!r} is not one character; "
                   "expected characters separated by spaces with `_` between words (Mikolov's ptb.char.* format, "
                   "e.g. 't h e _ c a t'), not words\n")


@pytest.fixture(scope="module", params=["onlstm", "prpn"])
def trained(request, tmp_path_factory):
    """A tiny character-level ON-LSTM or PRPN trained for a few steps by the CLI; its folder."""
    root = tmp_path_factory.mktemp(f"char-{request.param}")
    corpus = write_char_corpus(root / "corpus")
    model = PRPN if request.param == "prpn" else None
    optim = {"name": "adam", "lr": 0.01, "clip": 1.0} if request.param == "prpn" else {"lr": 5.0}
    config = root / "tiny.yaml"
    config.write_text(yaml.safe_dump(char_config(corpus, model, optim=optim, train={"epochs": 1})))
    assert main(["train", str(config), "--out", str(root / "run"), "--no-progress", "--max-steps", "60"]) == 0
    return root


def test_train_and_eval_print_bits_per_character(trained, capsys):
    assert main(["eval", str(trained / "run" / "best.pt"), "--split", "test"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    characters = sum(len(line.split()) + 1 for line in
                     (trained / "corpus" / "ptb.char.test.txt").read_text().split("\n")[:-1])
    assert result["split"] == "test" and result["characters"] == characters - 1  # every target but the first
    assert result["bpc"] == pytest.approx(result["loss"] / math.log(2))
    uniform = math.log2(len(set("".join(WORDS)) | {"_"}) + 1)
    assert result["bpc"] < uniform - 0.25  # learnt something about the characters (uniform: 4.64 bits)
    record = [json.loads(line) for line in (trained / "run" / "metrics.jsonl").read_text().splitlines()]
    assert any(r["event"] == "eval" and "bpc" in r for r in record)
    assert all("bpc" in r and "ppl" not in r for r in record if r["event"] == "train")
    png = trained / "curve.png"  # before: KeyError 'ppl' (validation records hold ppl, training ones bpc)
    assert main(["metrics", str(trained / "run"), "--plot", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_the_model_reads_and_parses_characters(trained, capsys):
    lm = treenets.load(trained / "run" / "best.pt")
    assert lm.tokenize("the cat") == ["t", "h", "e", "_", "c", "a", "t"]
    assert lm.tokenize("Red car.") == list("red_car")  # normalised as the PTB text, then spelled out
    assert lm.tokenize(["red", "car"]) == lm.tokenize("red car", pretokenized=True) == list("red_car")
    assert lm.parse("the dog of").tree.leaves() == list("the_dog_of")
    with pytest.raises(treenets.TreenetsError, match="sentence 'a zebra': token 'z' is not in the vocabulary"):
        lm.score("a zebra")  # no z in the training text, and no unknown symbol
    assert main(["parse", str(trained / "run" / "best.pt"), "the dog sat"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[1] t h e _ d o g _ s a t"
    assert nltk.Tree.fromstring(out[1]).leaves() == list("the_dog_sat")


def test_parse_eval_refuses_a_character_model(trained, tmp_path, capsys):
    treebank = tmp_path / "tiny.mrg"
    treebank.write_text("( (S (NP (DT the) (NN dog)) (VP (VBD sat))) )\n")
    best = trained / "run" / "best.pt"
    assert main(["parse-eval", str(best), "--treebank", str(treebank)]) == 2
    err = capsys.readouterr().err
    assert err == (f"treenets: error: parse-eval: {best}: a character-level model (char-lm) draws its trees over "
                   "characters, a treebank's are over words, so they cannot be scored against each other "
                   "(`treenets parse` shows its trees)\n")
