"""Targeted syntactic evaluation: counts and accuracies worked out by hand, the table, `treenets syneval`."""

from __future__ import annotations

import json
import pickle

import pytest
from helpers import train_tiny_lm

import treenets
from treenets.cli import main
from treenets.core.vocab import Vocab
from treenets.data.syneval import TEMPLATES, CaseItems, select_cases
from treenets.predictors.lm import SentenceScore
from treenets.workflows.syneval import evaluate_syneval, format_table

# Log-probabilities of the stub model, by the sentence as it reads it.
LOGPROBS = {
    "the dog barks": -3.0, "the dog bark": -4.0,  # right
    "the dogs bark": -5.0, "the dogs barks": -4.0,  # wrong
    "a dog barks": -2.0, "a dog bark": -2.5,  # right
    "the <unk> barks": -6.0, "the <unk> bark": -7.0,  # right, `cat` unknown
    "the dog <unk>": -8.0,  # `meows` and `meow` read alike: a tie, wrong
    "no dogs ever bark": -9.0, "the dogs that no dog sees ever bark": -10.0, "most dogs ever bark": -8.5,
    "no <unk> ever bark": -9.0, "the <unk> that no dog sees ever bark": -9.0, "most <unk> ever bark": -9.5,
}


class StubLM:
    """A language model with a fixed log-probability per sentence; records the batches it scores."""

    def __init__(self):
        words = ["the", "a", "dog", "dogs", "barks", "bark", "no", "ever", "most", "that", "sees"]
        self.vocab = Vocab(["<eos>", "<unk>", *words])
        self.batches = []

    def tokenize(self, sentence, pretokenized=False):
        assert pretokenized  # syneval's sentences are tokenised already
        return sentence.lower().split()

    def score(self, sentences, pretokenized=False):
        scores = []
        for sentence in sentences:
            tokens = self.tokenize(sentence, pretokenized)
            unknown = [t for t in tokens if t not in self.vocab]
            scores.append(SentenceScore(tokens, [LOGPROBS[self._reading(tokens)]], unknown))
        self.batches.append([self._reading(s.tokens) for s in scores])
        return scores

    def _reading(self, tokens):
        return " ".join(t if t in self.vocab else "<unk>" for t in tokens)


def _case(name, conditions):
    return CaseItems(select_cases([name])[0], conditions)


AGREEMENT = _case("simple", {"f:sing": [("the dog barks", "the dog bark"), ("The dogs bark", "the dogs barks"),
                                        ("the cat barks", "the cat bark")],
                             "f:plur": [("the dog meows", "the dog meow"), ("a dog barks", "a dog bark")]})
NPI = _case("npi_simple", {"f:past": [("no dogs ever bark", "the dogs that no dog sees ever bark",
                                       "most dogs ever bark"),
                                      ("no cats ever bark", "the cats that no dog sees ever bark",
                                       "most cats ever bark")]})


def test_counts_and_accuracies_by_hand():
    lm = StubLM()
    result = evaluate_syneval(lm, [AGREEMENT, NPI], batch_size=4, progress=False)
    agreement, npi = result.cases
    (pairs,) = agreement.comparisons
    # 5 pairs: right, wrong, right (<unk>), tie (<unk>), right
    assert (pairs.against, pairs.pairs, pairs.oov_pairs, pairs.correct, pairs.covered_correct) == \
           ("ungrammatical", 5, 2, 3, 2)
    assert pairs.accuracy == 0.6 and pairs.covered_pairs == 3 and pairs.covered_accuracy == 2 / 3
    # simple NPI: the grammatical sentence against the unlicensed one (the paper's row), then the intrusive one
    unlicensed, intrusive = npi.comparisons
    assert (npi.name, npi.label) == ("npi_simple", "NPI: simple")
    assert (intrusive.against, intrusive.pairs, intrusive.oov_pairs, intrusive.correct) == ("intrusive", 2, 1, 1)
    assert intrusive.covered_accuracy == 1.0
    assert (unlicensed.against, unlicensed.correct, unlicensed.covered_correct) == ("ungrammatical", 1, 0)
    assert unlicensed.accuracy == 0.5 and unlicensed.covered_accuracy == 0.0
    assert result.unknown_types == ["cat", "cats", "meow", "meows"]
    assert len(result.word_types) == 15  # 11 known + 4 unknown, `The` read as `the`
    # each distinct reading scored once, shortest first, in batches of at most 4
    scored = [s for batch in lm.batches for s in batch]
    assert sorted(scored) == sorted(LOGPROBS) and result.sentences == len(LOGPROBS)
    assert [len(s.split()) for s in scored] == sorted(len(s.split()) for s in scored)
    assert max(len(batch) for batch in lm.batches) == 4


class ReversedLM(StubLM):
    """The stub with every log-probability negated: the opposite answers, the same ties."""

    def score(self, sentences, pretokenized=False):
        return [SentenceScore(s.tokens, [-s.total], s.unknown) for s in super().score(sentences, pretokenized)]


def test_covered_accuracy_is_none_without_covered_pairs_and_the_table_shows_a_dash():
    cases = [_case("simple", {"f:sing": [("the cat barks", "the cat bark")]}), NPI]
    one = evaluate_syneval(StubLM(), cases, progress=False)
    assert one.cases[0].comparisons[0].covered_accuracy is None
    two = evaluate_syneval(ReversedLM(), cases, progress=False)
    lines = format_table(["one.pt", "two.pt"], [one, two]).splitlines()
    assert lines[:2] == ["[1] one.pt", "[2] two.pt"]
    assert lines[3].split() == ["case", "pairs"] + ["all", "covered", "oov"] * 2
    assert lines[4].split() == ["Simple", "1", "1.00", "-", "1", "0.00", "-", "1"]
    assert lines[5].split() == ["NPI:", "simple", "2", "0.50", "0.00", "1", "0.50", "1.00", "1"]
    assert lines[6].split() == ["vs.", "intrusive", "2", "0.50", "1.00", "1", "0.00", "0.00", "1"]
    assert len(lines) == 7


def test_the_dictionary_form_holds_every_field():
    result = evaluate_syneval(StubLM(), [AGREEMENT], progress=False).to_dict()
    assert result["sentences"] == 9 and result["word_types"] == 9 and result["unknown_types"] == ["cat", "meow",
                                                                                                  "meows"]
    assert result["cases"][0]["comparisons"][0] == {
        "against": "ungrammatical", "pairs": 5, "oov_pairs": 2, "covered_pairs": 3, "correct": 3,
        "covered_correct": 2, "accuracy": 0.6, "covered_accuracy": 2 / 3}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny language model, and a data root with a small `simple_agrmt.pickle` over its words."""
    root = train_tiny_lm(tmp_path_factory.mktemp("syneval"))
    folder = root / "data" / TEMPLATES
    folder.mkdir(parents=True)
    conditions = {
        "sing_MS_MV": [("the dog see", "the dog sees"), ("a cat eat", "a cat eats"), ("the bird run", "the bird runs"),
                       ("the zebra walk", "the zebra walks"), ("the fish take", "the fish takes"),
                       ("the tree give", "the tree gives")],
        "plur_MS_MV": [("the dog see fish", "the dog eat fish"), ("a cat of the tree eat", "a cat of the trees eat"),
                       ("the bird walk", "the bird walked"), ("the sun find", "the suns find"),
                       ("the moon know", "the moon knows"), ("the star think", "the star thinks")],
    }
    (folder / "simple_agrmt.pickle").write_bytes(pickle.dumps(conditions, protocol=0))
    return root, conditions


def test_syneval_command_prints_the_table_and_writes_json(run, capsys):
    root, conditions = run
    checkpoint, output = str(root / "run" / "best.pt"), root / "syneval.json"
    assert main(["syneval", checkpoint, "--cases", "simple", "--limit", "5", "--output", str(output),
                 "--data", str(root / "data"), "--device", "cpu", "--batch-size", "3"]) == 0
    out = capsys.readouterr().out
    # the expected counts, from the model's own score of each sentence
    lm = treenets.load(checkpoint)
    items = conditions["sing_MS_MV"][:5] + conditions["plur_MS_MV"][:5]
    unknown = [bool(lm.score(good).unknown or lm.score(bad).unknown) for good, bad in items]
    right = [lm.score(good).total > lm.score(bad).total for good, bad in items]
    assert sum(unknown) == 9 and not unknown[5]  # every pair but the sixth has a word outside the 44-word vocabulary
    assert "1 case(s), 10 items, the first 5 of each condition" in out
    row = next(line for line in out.splitlines() if line.startswith("Simple"))
    assert row.split() == ["Simple", "10", f"{sum(right) / 10:.2f}", f"{float(right[5]):.2f}", "9"]
    assert "[1] 10 of 27 test word types not in the vocabulary (read as <unk>)" in out
    document = json.loads(output.read_text())
    assert document["limit"] == 5 and document["data"].endswith(TEMPLATES)
    (model,) = document["checkpoints"]
    assert model["checkpoint"] == checkpoint and model["word_types"] == 27 and len(model["unknown_types"]) == 10
    assert "zebra" in model["unknown_types"] and model["sentences"] > 0 and model["seconds"] > 0
    (case,) = model["cases"]
    assert (case["case"], case["label"]) == ("simple", "Simple")
    assert case["comparisons"] == [{
        "against": "ungrammatical", "pairs": 10, "oov_pairs": 9, "covered_pairs": 1, "correct": sum(right),
        "covered_correct": int(right[5]), "accuracy": sum(right) / 10, "covered_accuracy": float(right[5])}]


def test_syneval_on_the_published_pairs(run, data_root, capsys):
    checkpoint = str(run[0] / "run" / "best.pt")
    assert main(["syneval", checkpoint, checkpoint, "--cases", "npi_simple", "simple", "--limit", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 case(s), 30 items, the first 5 of each condition" in out[0]
    rows = [line for line in out if line.startswith(("Simple", "NPI: simple", "  vs. intrusive"))]
    assert [row.split()[-7] for row in rows] == ["10", "20", "20"]  # pairs
    assert all(row.split()[-6:-3] == row.split()[-3:] for row in rows)  # the same model twice, side by side


def test_syneval_errors(run, tmp_path, capsys):
    checkpoint = str(run[0] / "run" / "best.pt")
    assert main(["syneval", checkpoint, "--cases", "simple", "agreement", "--data", str(run[0] / "data")]) == 2
    err = capsys.readouterr().err
    assert "treenets: error: unknown syneval case 'agreement': expected one of simple, sent_comp, vp_coord" in err
    with pytest.raises(SystemExit):  # argparse refuses it, naming the option
        main(["syneval", checkpoint, "--limit", "0"])
    assert "--limit: 0: expected a positive number" in capsys.readouterr().err
    assert main(["syneval", checkpoint, "--cases", "sent_comp", "--data", str(run[0] / "data")]) == 2
    assert "sent_comp.pickle: missing" in capsys.readouterr().err
    from treenets.config import build_config
    from treenets.tasks import task_class

    config = build_config({"task": "sentiment", "model": {"name": "lstm", "emb_size": 4, "mem_size": 4}})
    task = task_class("sentiment")
    task.Predictor(task.build_net(config, 3), Vocab(["<unk>", "a", "b"]), config).save(tmp_path / "sentiment.pt")
    assert main(["syneval", str(tmp_path / "sentiment.pt"), "--cases", "simple", "--data", str(run[0] / "data")]) == 2
    assert "a sentiment model, not for LanguageModel" in capsys.readouterr().err
