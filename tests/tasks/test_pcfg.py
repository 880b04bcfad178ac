"""Grammar induction: the `pcfg` task trains a Neural or Compound PCFG on sentences (batches of one length, the
length curriculum), resumes exactly, evaluates perplexity and the Viterbi trees' F1, and the trained grammar parses
raw text (`parse`, `--decode viterbi|mbr`, `--json`), scores sentences and is scored by `parse-eval`."""

from __future__ import annotations

import json
import math

import pytest
import torch
import yaml
from helpers import write_corpus

import treenets
from treenets.cli import main
from treenets.config import build_config
from treenets.tasks.pcfg import LengthBatches

pytestmark = pytest.mark.slow


@pytest.fixture
def treebank(tmp_path, data_root):
    """The first 30 trees of WSJ 24, one per line."""
    lines = (data_root / "wsj_trees" / "dev_24.LDC99T42").read_text().splitlines()[:30]
    path = tmp_path / "wsj24-head.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _config(corpus, treebank, model="neural-pcfg", **train) -> dict:
    sizes = {"nonterminals": 3, "preterminals": 4, "state_dim": 8}
    if model == "compound-pcfg":
        sizes.update(z_dim=2, h_dim=4, w_dim=4)
    return {"task": "pcfg",
            "data": {"path": str(corpus), "valid": [str(treebank)], "test": [str(treebank)], "batch_size": 4,
                     "max_length": 5, "length_increment": 2, "final_max_length": 9},
            "model": {"name": model, **sizes},
            "train": {"seed": 5, "epochs": 2, "log_interval": 5, "threads": 1, **train}}


def test_the_curriculum_reads_longer_sentences_each_epoch_in_batches_of_one_length():
    lengths = [1, 2, 2, 3, 5, 5, 5, 7, 9, 9, 12]
    batches = LengthBatches(lengths, 2, lambda epoch: 5 + 2 * epoch, seed=0)
    for epoch, limit in enumerate((5, 7, 9)):
        seen = []
        while (rows := batches.next_rows()) is not None:
            assert len({lengths[i] for i in rows}) == 1 and len(rows) <= 2  # one length a batch
            seen += rows
        assert sorted(seen) == [i for i, n in enumerate(lengths) if 2 <= n <= limit], epoch  # each once
    state = batches.state_dict()
    first = batches.next_rows()
    batches.load_state_dict(state)
    assert batches.next_rows() == first and batches.epoch == 3


@pytest.mark.parametrize("model", ["neural-pcfg", "compound-pcfg"])
def test_a_grammar_trains_resumes_evaluates_and_parses(tmp_path, treebank, model, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    config = tmp_path / "pcfg.yaml"
    config.write_text(yaml.safe_dump(_config(corpus, treebank, model)))
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress", "--max-steps", "12"]) == 0
    assert main(["train", "--resume", str(tmp_path / "run" / "last.pt"), "--no-progress", "--max-steps", "1000"]) == 0
    config.write_text(yaml.safe_dump(_config(corpus, treebank, model)))
    assert main(["train", str(config), "--out", str(tmp_path / "whole"), "--no-progress"]) == 0
    resumed = torch.load(tmp_path / "run" / "last.pt", weights_only=True)["model"]
    whole = torch.load(tmp_path / "whole" / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(resumed[k], whole[k]) for k in whole)  # a resumed run is the run (z's draws too)
    capsys.readouterr()

    best = str(tmp_path / "whole" / "best.pt")
    assert main(["eval", best, "--split", "test"]) == 0
    result = json.loads(capsys.readouterr().out)
    ppl = "ppl_bound" if model == "compound-pcfg" else "ppl"  # the ELBO's bound is named as such
    assert math.isfinite(result[ppl]) and result[ppl] > 1 and 0 <= result["sentence_f1"] <= 100
    assert ("ppl" in result) == (model == "neural-pcfg")

    assert main(["parse", best, "--json", "The Cat sat on the mat, 3 times."]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["the", "cat", "sat", "on", "the", "mat", "N", "times"]
    assert record["decode"] == "viterbi" and record["labelled_tree"].startswith("(NT-")
    assert len(record["spans"]) == 7 and all(0 <= label < 3 for *_, label in record["spans"])
    assert len(record["tags"]) == 8 and all(0 <= tag < 4 for tag in record["tags"])
    assert main(["parse", best, "--decode", "mbr", "the cat sat", "dog"]) == 0
    out = capsys.readouterr().out
    assert "labelled (mbr): (NT-" in out and "labelled (mbr): (NT (T-" in out  # a one-word sentence: its tag

    grammar = treenets.load(best)
    viterbi, mbr = grammar.parse("the cat sat on the mat"), grammar.parse("the cat sat on the mat", decode="mbr")
    assert viterbi.spans[-1][:2] == (0, 5) and mbr.spans[-1][:2] == (0, 5)
    assert grammar.score("dog").logprob == -math.inf and grammar.score("the cat").logprob < 0

    assert main(["parse-eval", best, "--treebank", str(treebank)]) == 0
    assert best in capsys.readouterr().out
    assert main(["parse-eval", best, "--treebank", str(treebank), "--decode", "mbr", "--output",
                 str(tmp_path / "mbr")]) == 0
    records = [json.loads(line) for line in (tmp_path / "mbr" / "sentences.jsonl").read_text().splitlines()]
    parses = grammar.parse([r["words"] for r in records[:5]], decode="mbr")
    assert [r["models"]["whole-best-layer1"]["tree"] for r in records[:5]] == [p.nested for p in parses]


def test_a_text_of_ones_own_without_unk_and_the_vocabulary_size(tmp_path, treebank):
    """A training text without `<unk>` (a corpus of one's own) still reads other words as `<unk>`; `vocab_size`
    keeps the most frequent words (Kim's `--vocabsize`), ties to the first seen."""
    from treenets.tasks.pcfg import PCFGTask

    corpus = tmp_path / "mine"
    corpus.mkdir()
    (corpus / "ptb.train.txt").write_text(" the dog sees the cat \n the cat runs \n a bird sings \n")
    config = build_config({**_config(corpus, treebank), "data": {**_config(corpus, treebank)["data"],
                                                                 "vocab_size": 4}})
    task = PCFGTask(config)
    assert task.vocab.words == ["the", "dog", "cat", "<unk>"]  # the three most frequent, then <unk>
    assert task.unknown_tokens("valid") > 0 and task.evaluate(task.build_model(), "valid").values()["ppl"] > 1


def test_eval_file_gives_a_grammars_kl_and_bound_as_a_split_does_and_says_what_it_skips(tmp_path, capsys):
    """Before: `eval compound-pcfg-ptb --file` reported "kl": 0.0 and "ppl" (the predictor's metric summed the
    bound alone), where its forward pass gives each sentence a positive KL and a split reports the bound as
    `ppl_bound`; one-word lines were dropped unsaid, and a text of them alone gave `ppl` null with exit 0."""
    text = tmp_path / "s.txt"
    text.write_text("The cat sat on the mat.\nA dog ran home\nDog\n")
    assert main(["eval", "compound-pcfg-ptb", "--file", str(text)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    grammar = treenets.load("compound-pcfg-ptb")
    kls = []
    for sentence in ("the cat sat on the mat", "a dog ran home"):
        ids = torch.tensor([grammar.vocab.encode(sentence.split())[0]])
        with torch.no_grad():
            kls.append(float(grammar.net(ids, torch.tensor([ids.size(1)]), use_mean=True).kl))
    assert all(kl > 0 for kl in kls) and result["kl"] == pytest.approx(sum(kls) / 2, rel=1e-4)
    assert "ppl" not in result and result["ppl_bound"] > 1 and result["tokens"] == 7 + 5
    assert f"note: --file {text}: 1 of 3 line(s) skipped, of one word (a grammar scores sentences of two words or " \
           "more" in captured.err
    text.write_text("cat\ndog\nbird\n")
    assert main(["eval", "compound-pcfg-ptb", "--file", str(text)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"treenets: error: --file {text}: none of its 3 line(s) reads as two words or more (a "
                          "grammar scores sentences of two words or more"), err


def test_a_text_without_a_sentence_the_grammar_reads_or_no_validation_treebank_is_refused_up_front(tmp_path,
                                                                                                   treebank, capsys):
    """Before: `--set data.max_length=1` (or a text of one-word lines) said "fewer examples than one batch" of a
    text of dozens, and `data.valid=[]` trained, wrote its checkpoints, then failed with "the grammar gives a
    sentence probability 0"."""
    corpus = write_corpus(tmp_path / "corpus")
    config = tmp_path / "pcfg.yaml"
    config.write_text(yaml.safe_dump(_config(corpus, treebank)))
    train = ["train", str(config), "--out", str(tmp_path / "run"), "--no-progress", "--max-steps", "1"]
    lines = len((corpus / "ptb.train.txt").read_text().splitlines())
    assert main([*train, "--set", "data.max_length=1"]) == 2
    err = capsys.readouterr().err
    assert "no sentence to train on: a grammar reads sentences of 2 words or more" in err, err
    assert f"the first epoch those of at most data.max_length 1; of the text's {lines:,} line(s), {lines:,} have 2 " \
           "words or more, none of them within the length limit" in err, err
    (corpus / "ptb.train.txt").write_text("cat\ndog\n" * 20)
    assert main(train) == 2
    assert "none of the text's 40 line(s) has two" in capsys.readouterr().err
    write_corpus(corpus)
    assert main([*train, "--set", "data.valid=[]"]) == 2
    err = capsys.readouterr().err
    assert "data: valid is [], no treebank: a grammar is validated and selected on the perplexity of a treebank's " \
           "sentences" in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "last.pt").exists()
