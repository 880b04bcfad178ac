"""Parsing with a trained language model: `treenets parse`, `parse-eval`, `baselines`, `model.parse`."""

from __future__ import annotations

import json
import math

import nltk
import pytest
import yaml
from helpers import train_tiny_lm

import treenets
from treenets.cli import main
from treenets.trees.ptb import load_gold


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny language model trained for one epoch, and a small treebank over its words."""
    root = train_tiny_lm(tmp_path_factory.mktemp("parsing"))
    treebank = root / "tiny.mrg"
    treebank.write_text(
        "( (S (NP (DT the) (NN dog)) (VP (VBD bird) (PP (IN of) (NP (DT a) (NN fish)))) (. .)) )\n"
        "( (S (NP (NNP Tree)) (VP (VBZ house) (NP (DT the) (NNS car) (NNS road))) (. .)) )\n"
        "( (S (NP (-NONE- *)) (. .)) )\n"  # nothing left after filtering
        "( (NP (NN zebra) (NN city)) )\n"  # an unknown word
    )
    return root


def test_model_parse_returns_an_nltk_tree(run):
    lm = treenets.load(run / "run" / "best.pt")
    parse = lm.parse("the dog bird of a fish")
    tree = parse.tree
    assert isinstance(tree, nltk.Tree) and tree.leaves() == ["the", "dog", "bird", "of", "a", "fish"]
    assert parse.layer == lm.default_layer == 2 and parse.distances.shape == (2, 6)
    assert lm.parse("dog").tree.leaves() == ["dog"]
    assert lm.parse("the dog bird", layer="mean").tree.leaves() == ["the", "dog", "bird"]
    # One batched path: a list of sentences gives the trees of the sentences parsed one by one, and `at`
    # builds another layer's tree from the same distances.
    sentences = ["the dog bird of a fish", "a fish", "dog"]
    batch = lm.parse(sentences, layer=1, batch_size=2)
    assert [p.nested for p in batch] == [lm.parse(s, layer=1).nested for s in sentences]
    assert batch[0].at(2).nested == parse.nested
    with pytest.raises(treenets.TreenetsError, match="layer 3: expected a layer number from 1 to 2"):
        lm.parse("a dog", layer=3)


def test_parse_command_prints_trees_distances_and_svg(run, tmp_path, capsys):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the dog bird\n\nfish of zebra\n")
    svg = tmp_path / "svg"
    assert main(["parse", str(run / "run" / "best.pt"), "a dog of bird", "--file", str(sentences), "--distances",
                 "--svg", str(svg), "--layer", "1"]) == 0
    out = capsys.readouterr().out
    assert "[1] a dog of bird" in out and "(X " in out
    assert "unknown words (read as <unk>): zebra" in out
    assert "layer 2: " in out  # every layer's distances
    assert len(list(svg.glob("*.svg"))) == 3
    assert (svg / "0001.svg").read_text().startswith("<svg")
    # The folder of an earlier run's drawings is written again: those it no longer writes removed
    assert main(["parse", str(run / "run" / "best.pt"), "a dog of bird", "--svg", str(svg)]) == 0
    assert sorted(p.name for p in svg.glob("*.svg")) == ["0001.svg"]


def test_parse_svg_writes_over_no_drawing_it_did_not_write(run, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "0001.svg").write_text("my own drawing")
    assert main(["parse", str(run / "run" / "best.pt"), "a dog", "--svg", str(mine)]) == 2
    err = capsys.readouterr().err
    assert f"--svg {mine}: holds files that no earlier report of treenets wrote (0001.svg)" in err
    assert (mine / "0001.svg").read_text() == "my own drawing"
    assert main(["parse", str(run / "run" / "best.pt"), "a dog", "--svg", str(mine), "--overwrite"]) == 0
    assert (mine / "0001.svg").read_text().startswith("<svg")


def test_drawings_of_a_parse_stopped_part_way_are_its_own(run, tmp_path, monkeypatch):
    import treenets.workflows.parse

    written = []

    def draw_then_stop(tree, path):  # the output closed after the first drawing (say, `| head`)
        if written:
            raise BrokenPipeError
        written.append(path)
        path.write_text("<svg/>")

    monkeypatch.setattr(treenets.workflows.parse, "write_svg", draw_then_stop)
    svg = tmp_path / "svg"
    with pytest.raises(BrokenPipeError):
        treenets.workflows.parse.print_trees(str(run / "run" / "best.pt"), ["a dog", "a fish"], svg=str(svg))
    monkeypatch.undo()
    # the drawing it wrote is recorded as its own: the next run writes into the folder without --overwrite
    assert main(["parse", str(run / "run" / "best.pt"), "a dog", "--svg", str(svg)]) == 0
    assert (svg / "0001.svg").read_text().startswith("<svg") and len(written) == 1


def _json_lines(out: str) -> list[dict]:
    """Each line of `out` read as strict JSON (NaN and Infinity refused)."""

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return [json.loads(line, parse_constant=refuse) for line in out.splitlines()]


def test_parse_json_prints_one_object_per_sentence(run, tmp_path, capsys):
    best = str(run / "run" / "best.pt")
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Fish of Zebra!\n\n")
    assert main(["parse", best, "The dog, bird of a fish.", "--file", str(sentences), "--json", "--distances"]) == 0
    first, second = _json_lines(capsys.readouterr().out)
    assert set(first) == {"text", "tokens", "unknown", "dropped", "tree", "layer", "distances"}
    assert first["text"] == "The dog, bird of a fish."
    assert first["tokens"] == ["the", "dog", "bird", "of", "a", "fish"] and first["unknown"] == []
    assert first["dropped"] == [{"text": ",", "start": 7, "why": "punctuation or symbol"},
                                {"text": ".", "start": 23, "why": "punctuation or symbol"}]
    assert nltk.Tree.fromstring(first["tree"]).leaves() == first["tokens"] and first["layer"] == 2
    assert len(first["distances"]) == 2 and all(len(row) == 6 for row in first["distances"])
    assert all(0.0 <= value <= 1.0 for row in first["distances"] for value in row)
    # unknown words as the model read them, not as <unk>
    assert second["tokens"] == ["fish", "of", "zebra"] and second["unknown"] == ["zebra"]
    assert main(["parse", best, "a dog of fish", "--json", "--layer", "all"]) == 0
    (record,) = _json_lines(capsys.readouterr().out)
    assert "distances" not in record and set(record["trees"]) == {"1", "2", "mean"}
    assert record["layer"] == 2 and record["tree"] == record["trees"]["2"]  # the default layer's
    assert main(["parse", best, "a dog of fish", "--json", "--layer", "mean"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["layer"] == "mean"


def test_parse_says_what_of_a_sentence_the_model_read_nothing_from(run, capsys):
    # Before: an emoji and a zero-width joiner vanished without a word.
    assert main(["parse", str(run / "run" / "best.pt"), "the d\u200dog \U0001f600 of a fish"]) == 0
    assert "[1] the dog of a fish\n    dropped: <U+200D> \U0001f600\n" in capsys.readouterr().out


def test_parse_json_refuses_distances_that_are_not_numbers(run, capsys, monkeypatch):
    # JSON has no NaN: a damaged model's distances get one clear line instead of `NaN` in the output.
    import torch

    from treenets.predictors import LanguageModel, Parse

    def nan_distances(self, sentences, layer=None, split="official", batch_size=64, pretokenized=False):
        return [Parse(self.tokenize(s, pretokenized), torch.full((2, len(self.tokenize(s, pretokenized))), math.nan),
                      layer, split, []) for s in sentences]

    monkeypatch.setattr(LanguageModel, "parse", nan_distances)
    assert main(["parse", str(run / "run" / "best.pt"), "a dog", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ("treenets: error: sentence 1: the model's distances are not finite "
                                                   "numbers (a damaged model?)\n")


def test_parse_reads_text_as_the_training_text_unless_it_is_pretokenized(run, capsys):
    best = str(run / "run" / "best.pt")
    assert main(["parse", best, "The Dog, of bird."]) == 0
    assert capsys.readouterr().out.startswith("[1] the dog of bird\n")
    assert main(["parse", best, "the Dog of bird .", "--pretokenized", "--json"]) == 0
    (record,) = _json_lines(capsys.readouterr().out)
    assert record["tokens"] == ["the", "dog", "of", "bird", "."] and record["unknown"] == ["."]


def test_a_5000_word_line_is_parsed(run, tmp_path, capsys):
    words = ["The", "dog,", "a", "bird", "of", "the", "fish", "saw", "a", "red", "car."] * 455
    path = tmp_path / "long.txt"
    path.write_text(" ".join(words) + "\n")
    assert main(["parse", str(run / "run" / "best.pt"), "--file", str(path), "--json"]) == 0
    (record,) = _json_lines(capsys.readouterr().out)
    assert len(record["tokens"]) == len(words) == 5005 and record["tokens"][:3] == ["the", "dog", "a"]
    assert record["tree"].replace("(X ", "").replace(")", "").split() == record["tokens"]  # (nltk stops at 500 levels)


@pytest.mark.parametrize(("given", "message"), [
    (["   "], "treenets: error: empty sentence '   ': expected at least one word"),
    (["a dog", "?! ..."], "treenets: error: sentence '?! ...': no word left after the ptb normaliser (Penn Treebank "
                          "tokens in lower case, numbers as N, punctuation dropped, as in Mikolov's PTB text); "
                          "expected at least one word"),
    (["--file", "{empty}"], "treenets: error: {empty}: no sentence in it (expected --file: a text file of sentences"),
    (["--file", "{binary}"], "treenets: error: {binary}: binary file (expected --file: a text file of sentences"),
])
def test_parse_refuses_text_without_words_in_one_line(run, tmp_path, capsys, given, message):
    files = {"empty": tmp_path / "empty.txt", "binary": tmp_path / "binary.txt"}
    files["empty"].write_text("\n  \n")
    files["binary"].write_bytes(b"a dog\n" + bytes(range(256)))
    names = {name: str(path) for name, path in files.items()}
    args = [arg.format(**names) for arg in given]
    for json_output in ([], ["--json"]):
        assert main(["parse", str(run / "run" / "best.pt"), *args, *json_output]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""  # refused before any sentence is printed
        assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1
        assert captured.err.startswith(message.format(**names))


def test_eval_of_a_text_file(run, tmp_path, capsys):
    best = str(run / "run" / "best.pt")
    path = tmp_path / "text.txt"
    path.write_text("The dog, bird of a fish.\n\nA fish!\n")
    assert main(["eval", best, "--file", str(path)]) == 0
    (record,) = _json_lines(capsys.readouterr().out)
    lm = treenets.load(best)
    scores = lm.score(["The dog, bird of a fish.", "A fish!"])
    logprobs = [value for score in scores for value in score.logprobs]
    assert record["file"] == str(path) and record["sentences"] == 2 and record["tokens"] == len(logprobs) == 7 + 3
    assert record["ppl"] == pytest.approx(math.exp(-sum(logprobs) / len(logprobs)), rel=1e-5)
    assert main(["eval", best, "--file", str(path), "--pretokenized"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["tokens"] == 7 + 3  # `fish.` and `fish!` read as <unk>
    path.write_text("a fish\n...\n")
    assert main(["eval", best, "--file", str(path)]) == 2
    assert f"{path}:2: sentence '...': no word left after the ptb normaliser" in capsys.readouterr().err
    assert main(["eval", best, "--file", str(path), "--split", "test"]) == 2
    assert "eval: give --split or --file, not both" in capsys.readouterr().err


def test_predict_scores_what_the_language_model_reads(run, capsys):
    best = str(run / "run" / "best.pt")
    assert main(["predict", best, "--sentence", "The dog, of bird."]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == ["the", "dog", "of", "bird"]
    assert main(["predict", best, "--sentence", "the dog .", "--pretokenized"]) == 0
    assert json.loads(capsys.readouterr().out)["unknown"] == ["."]
    assert main(["predict", best, "--sentence", "?"]) == 2
    assert "--sentence: sentence '?': no word left after the ptb normaliser" in capsys.readouterr().err


def test_the_shipped_ptb_models_read_raw_text_as_their_training_text(capsys):
    # The stream language models were saved before the normaliser was recorded (their task's default, `ptb`);
    # the sentence-level PRPN trained on Mikolov's PTB sentences records `ptb`.
    text = "The U.S. economy grew 3.5% in 2019, analysts said."
    for name in ("onlstm-ptb-small", "prpn-up-small"):
        assert main(["parse", name, text, "--json"]) == 0
        (record,) = _json_lines(capsys.readouterr().out)
        assert record["tokens"] == ["the", "u.s.", "economy", "grew", "N", "N", "in", "N", "analysts", "said"]
        assert record["unknown"] == []


def test_parse_eval_table_outputs_and_runs(run, tmp_path, capsys):
    checkpoint = str(run / "run" / "best.pt")
    out_dir = tmp_path / "out"
    assert main(["parse-eval", checkpoint, checkpoint, "--treebank", str(run / "tiny.mrg"),
                 "--output", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "3 sentences scored, 1 empty after filtering" in out
    lines = out.splitlines()
    for name in ("right-branching", "left-branching", "balanced", "random (5 draws)"):
        assert any(line.startswith(name) for line in lines)
    rows = [line.split()[1] for line in lines if line.startswith(checkpoint + " ")]
    assert rows == ["1", "2", "mean"] * 2  # 2 runs x (layers 1, 2, mean)
    assert "1 of 13 words not in the vocabulary" in out  # zebra
    assert "std 0.0" in out and "self-F1 100.0" in out
    records = [json.loads(line) for line in (out_dir / "sentences.jsonl").read_text().splitlines()]
    assert len(records) == 4 and records[0]["words"] == ["the", "dog", "bird", "of", "a", "fish"]
    assert records[2]["distances"][checkpoint] is None  # the empty sentence
    # The checkpoint given twice: two systems, each with its own files (before, the second wrote over the first's)
    assert sorted(path.name for path in out_dir.glob("trees-*.txt")) == sorted(
        f"trees-run-best-layer{layer}{again}.txt" for layer in ("1", "2", "mean") for again in ("", "-2"))
    assert set(records[0]["models"]) == {f"run-best-layer{layer}{again}" for layer in ("1", "2", "mean")
                                         for again in ("", "-2")}
    summary = json.loads((out_dir / "summary.json").read_text())
    assert [row["model"] for row in summary["rows"]][-4:] == ["right-branching", "left-branching", "balanced",
                                                              "random (5 draws)"]
    assert all("sentence_f1" in row and "recall_NP" in row for row in summary["rows"])
    assert (next(out_dir.glob("figures/*.png"))).read_bytes()[:4] == b"\x89PNG"


def test_a_models_trees_written_out_read_back_as_a_system(tmp_path, capsys):
    # Before: the written trees had the tokens the model read (`%` is `N` to a PTB model), and read back against
    # the treebank they matched no sentence.
    treebank = tmp_path / "percent.mrg"
    treebank.write_text("( (S (NP (NNS prices)) (VP (VBD rose) (NP (CD 3) (NN %)) (PP (IN in) (NP (NN march))))) )\n")
    assert main(["parse-eval", "onlstm-ptb-small", "--layer", "2", "--treebank", str(treebank), "--output",
                 str(tmp_path / "out")]) == 0
    model_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("onlstm")).split()
    out = tmp_path / "out"
    for written in (out / "compound-pcfg" / "model-onlstm-ptb-small-layer2.txt",
                    out / "trees-model-onlstm-ptb-small-layer2.txt"):
        assert "%" in written.read_text()
        assert main(["parse-eval", str(written), "--treebank", str(treebank)]) == 0
        file_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(str(written))).split()
        assert file_row[1:] == model_row[2:]  # the same scores (the model's row has a layer)


def test_parse_eval_bad_input(run, tmp_path, capsys):
    assert main(["parse-eval", str(run / "run" / "best.pt"), "--treebank", str(tmp_path / "none.mrg")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["parse-eval", str(run / "run" / "best.pt"), "--treebank", str(run / "tiny.mrg"),
                 "--layer", "7"]) == 2
    assert "--layer 7" in capsys.readouterr().err
    assert main(["parse", str(run / "run" / "best.pt")]) == 2


def test_no_figure_is_reported_over_sentences_without_a_phrase(run, tmp_path, capsys):
    # Before: sentence, corpus and evalb F1 of 100.0 and exit 0; summary.json then held NaN (not JSON).
    treebank = tmp_path / "short.mrg"
    treebank.write_text("( (S (NN dog)) )\n( (S (. .)) )\n( (S (NN dog) (VBD ran)) )\n")
    for command in (["parse-eval", str(run / "run" / "best.pt")], ["baselines"]):
        assert main([*command, "--treebank", str(treebank)]) == 2
        err = capsys.readouterr().err
        assert "no sentence with a phrase to score (3 sentences: 1 empty after filtering" in err


def test_parse_eval_writes_strict_json_and_says_n_a_for_a_label_without_phrases(run, tmp_path, capsys):
    treebank = tmp_path / "unlabelled.mrg"
    treebank.write_text("( (X (Y (DT the) (NN dog)) (Z (VBD ran) (W (IN of) (DT a)))) )\n")
    assert main(["parse-eval", str(run / "run" / "best.pt"), "--treebank", str(treebank), "--output",
                 str(tmp_path / "out")]) == 0
    assert " n/a" in capsys.readouterr().out and "nan" not in (tmp_path / "out" / "summary.json").read_text()

    def refuse(constant):
        raise ValueError(constant)

    rows = json.loads((tmp_path / "out" / "summary.json").read_text(), parse_constant=refuse)["rows"]
    assert rows[0].get("recall_NP") is None  # no NP in the gold trees: no recall, not NaN


def test_baselines_match_the_published_right_branching(data_root, capsys):
    assert main(["baselines", "--treebank", "nltk-sample", "--random-draws", "1"]) == 0
    out = capsys.readouterr().out
    right = next(line for line in out.splitlines() if line.startswith("right-branching")).split()
    left = next(line for line in out.splitlines() if line.startswith("left-branching")).split()
    assert (right[1], left[1]) == ("39.9", "8.6")
    assert main(["baselines", "--treebank", "nltk-sample", "--wsj10", "--random-draws", "1"]) == 0
    out = capsys.readouterr().out
    assert "555 sentences scored" in out
    right = next(line for line in out.splitlines() if line.startswith("right-branching")).split()
    assert right[1] == "58.6"


def test_wsj_sections_load(data_root):
    assert len(load_gold(data_root / "wsj_trees" / "22.auto.clean")) == 1700
    assert len(load_gold(data_root / "wsj_trees" / "dev_24.LDC99T42")) == 1346


def _random_treebank(path, count=60, seed=0):
    import random

    rng = random.Random(seed)
    nouns, verbs = ["cat", "dog", "bird", "fish", "tree", "house"], ["eat", "see", "run", "take", "give"]
    lines = []
    for _ in range(count):
        np1 = f"(NP (DT the) (NN {rng.choice(nouns)}))"
        np2 = f"(NP (DT a) (JJ {rng.choice(['big', 'small', 'old'])}) (NN {rng.choice(nouns)}))"
        lines.append(f"(TOP (S {np1} (VP (VBD {rng.choice(verbs)}) {np2}) (. .)))")
    path.write_text("\n".join(lines) + "\n")
    return path


def _sentence_prpn(train_trees, valid_trees, **sections) -> dict:
    """A tiny sentence-level PRPN config on two treebank files."""
    return {"task": "sentence-lm",
            "data": {"train": [str(train_trees)], "valid": [str(valid_trees)], "min_count": 1, "batch_size": 8,
                     "eval_batch_size": 4},
            "model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 4, "nlookback": 2,
                      "dropout": 0.1, "idropout": 0.1, "rdropout": 0.0},
            **sections}


def test_sentence_level_prpn_trains_and_parses(tmp_path, capsys):
    train_trees = _random_treebank(tmp_path / "train.trees")
    valid_trees = _random_treebank(tmp_path / "valid.trees", count=10, seed=1)
    config = _sentence_prpn(train_trees, valid_trees, optim={"name": "adam", "lr": 0.003},
                            train={"epochs": 2, "seed": 3, "threads": 1, "log_interval": 1})
    path = tmp_path / "up.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    lm = treenets.load(tmp_path / "run" / "best.pt")
    assert (lm.bos, lm.eos) == ("<s>", "</s>")
    assert lm.vocab.words[:3] == ["<unk>", "<s>", "</s>"]
    assert lm.parse("the cat see a big dog").tree.leaves() == ["the", "cat", "see", "a", "big", "dog"]
    assert lm.num_distance_rows == 1 and lm.default_layer == 1
    capsys.readouterr()
    assert main(["parse-eval", str(tmp_path / "run" / "best.pt"), "--treebank", str(valid_trees)]) == 0
    out = capsys.readouterr().out
    assert "10 sentences scored" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith(str(tmp_path))][:1] == ["1"]


def test_options_may_come_between_the_model_and_the_sentences(run, capsys):
    # Before: `treenets parse MODEL --layer 2 "the dog"` ended in "unrecognized arguments: the dog".
    assert main(["parse", str(run / "run" / "best.pt"), "--layer", "2", "the dog", "a fish"]) == 0
    out = capsys.readouterr().out
    assert "[1] the dog" in out and "[2] a fish" in out
    with pytest.raises(SystemExit):
        main(["parse", str(run / "run" / "best.pt"), "the dog", "--no-such-option"])


CTB = ("( (IP (NP (NR 中国) (NN 经济)) (VP (VV 增长) (NP (CD 百分之七))) (PU 。)) )\n"
       "( (IP (NP (PN 他们)) (VP (VV 说) (IP (NP (NN 天气)) (VP (VA 很好)))) (PU ，)) )\n")


def test_another_treebank_is_scored_with_its_own_rule_for_words(tmp_path, capsys):
    """The official rule keeps Penn Treebank word tags only: a Chinese treebank (CTB tags) has none, so it is
    refused; with `--words ctb` every word but punctuation (PU) and empty elements is kept, and the report says
    which rule was used."""
    treebank = tmp_path / "ctb.mrg"
    treebank.write_text(CTB)
    assert main(["baselines", "--treebank", str(treebank), "--random-draws", "1"]) == 2
    assert "no sentence with a phrase to score" in capsys.readouterr().err
    assert main(["baselines", "--treebank", str(treebank), "--random-draws", "1", "--words", "ctb"]) == 0
    out = capsys.readouterr().out
    assert "2 sentences scored" in out and "words: ctb (Penn Chinese Treebank" in out
    right = next(line for line in out.splitlines() if line.startswith("right-branching")).split()
    assert right[1] == "75.0"  # [中国 经济] missed, [增长 百分之七] found; the second tree: 2 of 2
    # --drop-tags adds tags to a rule: the same words with the UD rule told to drop PU
    assert main(["baselines", "--treebank", str(treebank), "--random-draws", "1", "--words", "ud",
                 "--drop-tags", "PU"]) == 0
    assert next(line for line in capsys.readouterr().out.splitlines()
                if line.startswith("right-branching")).split()[1] == "75.0"


def test_the_word_rules_keep_what_they_say():
    from treenets.trees.ptb import WORD_RULES, WORD_TAGS

    assert WORD_RULES["ptb"].keep == WORD_TAGS and not WORD_RULES["ptb"].keeps(".")
    assert WORD_RULES["negra"].keeps("NN") and not WORD_RULES["negra"].keeps("$,")
    assert not WORD_RULES["ptb"].dropping(["NN"]).keeps("NN") and WORD_RULES["ptb"].dropping(["NN"]).keeps("NNS")


def test_a_language_model_refuses_what_is_not_text_as_the_tree_lstms_do(run, tmp_path, capsys):
    # Before: undecodable bytes and control characters were read as symbols and dropped without a word.
    assert main(["parse", str(run / "run" / "best.pt"), "the \udcff dog"]) == 2
    assert "sentence: not text (bytes that are not UTF-8, or a lone surrogate)" in capsys.readouterr().err
    sentences = tmp_path / "s.txt"
    sentences.write_text("the dog\nthe \x01 fish\n")
    assert main(["parse", str(run / "run" / "best.pt"), "--file", str(sentences)]) == 0  # the line skipped
    assert f"{sentences}:2: not text (the control character U+0001); expected a sentence (skipped)" in \
        capsys.readouterr().err


def test_parse_of_a_file_skips_the_lines_it_cannot_read_and_says_which(run, tmp_path, capsys):
    # Before: the first such line (`!!!`) stopped it, exit 2, and no tree of the lines before or after it.
    best, path = str(run / "run" / "best.pt"), tmp_path / "lines.txt"
    path.write_text("a dog\n!!!\n\nthe \x01 fish\nthe bird\n")
    for json_output in ([], ["--json"]):
        for strict, code in (([], 0), (["--strict"], 1)):
            assert main(["parse", best, "--file", str(path), *strict, *json_output]) == code
            captured = capsys.readouterr()
            assert f"{path}:2: sentence '!!!': no word left after the ptb normaliser (" in captured.err
            assert f"{path}:4: not text (the control character U+0001); expected a sentence (skipped)" in captured.err
            assert captured.err.rstrip().splitlines()[-1] == \
                f"{path}: 2 of 4 sentences parsed, 2 skipped (unreadable)"
            if json_output:
                assert [json.loads(line)["text"] for line in captured.out.splitlines()] == ["a dog", "the bird"]
            else:
                assert [line for line in captured.out.splitlines() if line.startswith("[")] == ["[1] a dog",
                                                                                              "[2] the bird"]
    assert main(["parse", best, "!!!", "--file", str(path)]) == 2  # a sentence given is not skipped
    assert capsys.readouterr().err.startswith("treenets: error: sentence '!!!': no word left")
    path.write_text("!!!\n?\n")
    assert main(["parse", best, "--file", str(path)]) == 2
    assert f"treenets: error: {path}: no line of it could be read (above)" in capsys.readouterr().err


def test_a_treebank_trained_sentence_lm_reads_a_prepared_corpus_of_the_same_sentences_alike(tmp_path, capsys):
    # `eval --corpus`: the corpus's <eos> is the model's </s>, its ids go through the model's vocabulary
    train_trees = _random_treebank(tmp_path / "train.trees")
    valid_trees = _random_treebank(tmp_path / "valid.trees", count=10, seed=1)
    config = _sentence_prpn(train_trees, valid_trees, train={"max_steps": 2, "seed": 3, "threads": 1})
    (tmp_path / "up.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(tmp_path / "up.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    lm = treenets.load(tmp_path / "run" / "best.pt")
    texts = {}
    for name, trees in (("train", train_trees), ("valid", valid_trees)):
        texts[name] = tmp_path / f"{name}.txt"
        texts[name].write_text("".join(" ".join(s.words) + "\n" for s in load_gold(trees)))
    (tmp_path / "vocab.txt").write_text("\n".join(lm.vocab.words) + "\n")
    for vocab in ([], ["--vocab", str(tmp_path / "vocab.txt")]):  # the corpus's own ids, or the model's order
        capsys.readouterr()
        assert main(["data", "prepare", str(texts["train"]), "--valid", str(texts["valid"]), "--test",
                     str(texts["valid"]), "--out", str(tmp_path / "corpus"), "--overwrite", "--no-progress",
                     *vocab]) == 0
        results = []
        for corpus in ([], ["--corpus", str(tmp_path / "corpus")]):
            capsys.readouterr()
            assert main(["eval", str(tmp_path / "run" / "best.pt"), *corpus]) == 0
            results.append(json.loads(capsys.readouterr().out.splitlines()[0]))
        assert results[1]["tokens"] == results[0]["tokens"] and results[1]["unknown"] == 0  # (its <eos>: </s>)
        assert results[1]["ppl"] == pytest.approx(results[0]["ppl"], rel=1e-6)
