"""`treenets distill` end to end on a small corpus of its own: the teachers' trees (their generative ensemble, one
line per corpus line), reused on a second run, continued after a killed run (a torn last line) without parsing a
written line again, split into shards and merged, refused over other teachers; then the student trains, parses and
exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import treenets.workflows.distill
from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.report import tree_json
from treenets.trees import left_branching, right_branching
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.formats import tokens_of, tree_of
from treenets.trees.metrics import node_spans
from treenets.trees.walk import with_words

CORPUS = [
    "The U.S. economy grew 3.5% in 2019, analysts said.",
    "Dr. Smith paid $1,200.50 for 3 NEW books!",
    "",
    "cats sleep",
    "A quick brown fox jumps over the lazy dog near the river bank.",
    "Shares of IBM fell 2 points to 104 3/4 on Monday.",
    "Hello",
    "The Fed raised rates by 0.25% -- again.",
]


def _tree(line: str):
    tokens = tokens_of(line, "test")
    return tree_of(tokens, True)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("\n".join(CORPUS * 5) + "\n")
    return path


@pytest.fixture
def student_config(tmp_path, data_root):
    """The shipped recipe at a toy size, validated on 30 trees of WSJ 24."""
    lines = (data_root / "wsj_trees" / "dev_24.LDC99T42").read_text().splitlines()[:30]
    treebank = tmp_path / "wsj24-head.txt"
    treebank.write_text("\n".join(lines) + "\n")
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "ptb-distilled.yaml").read_text())
    config["data"].update(valid=[str(treebank)], test=[str(treebank)], batch_size=4)
    config["model"].update(word_dim=8, char_dim=4, char_channels=6, hidden_dim=8, layers=1, mlp_dim=8)
    config["train"].update(epochs=2, log_interval=5)
    path = tmp_path / "student.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _words(line: str) -> list[str]:
    return [w for w in line.split() if w]


@pytest.fixture
def teacher_files(tmp_path):
    """Three teachers' files over a pretokenized corpus: right-branching twice, left-branching once (an empty line
    where there is no tree)."""
    lines = [" ".join(w.lower() for w in line.split()) for line in CORPUS * 5]
    corpus = tmp_path / "words.txt"
    corpus.write_text("\n".join(lines) + "\n")
    files = []
    for k, tree in enumerate((right_branching, right_branching, left_branching)):
        path = tmp_path / f"teacher{k}.txt"
        path.write_text("\n".join(bracketed(tree(line.split())) if len(line.split()) >= 2 else "" for line in lines)
                        + "\n")
        files.append(str(path))
    return corpus, lines, files


def _expected(lines, files):
    """Each line's ensemble tree, as `combine` gives it from the files' trees."""
    teachers = [Path(f).read_text().splitlines() for f in files]
    found = []
    for k, line in enumerate(lines):
        words = line.split()
        if len(words) < 2:
            found.append("")
            continue
        trees = []
        for own in teachers:
            spans = sorted(s for s in node_spans(_tree(own[k]))[0] if s[1] - s[0] >= 2)
            trees.append(nested_from_spans(list(range(len(words))), spans))
        tree, _ = combine(list(range(len(words))), trees)
        found.append(bracketed(with_words(tree, words)))
    return found


def test_teachers_trees_are_their_ensembles_one_line_per_corpus_line_and_reused(tmp_path, teacher_files, capsys):
    corpus, lines, files = teacher_files
    out = tmp_path / "d"
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only"]) == 0
    written = (out / "teachers.txt").read_text().splitlines()
    assert written == _expected(lines, files)
    assert written[3] == bracketed(right_branching(["cats", "sleep"]))  # two of three teachers agree
    record = json.loads((out / "teachers.json").read_text())
    assert record["teachers"] == files and record["lines"] == len(lines)
    capsys.readouterr()
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only"]) == 0
    assert "reused" in capsys.readouterr().err
    # other teachers over the same folder: refused, naming what it holds; --overwrite starts again
    assert main(["distill", *files[:2], "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only"]) == 2
    err = capsys.readouterr().err
    assert "teachers.json" in err and "--overwrite" in err
    assert main(["distill", *files[:2], "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only", "--overwrite"]) == 0
    assert (out / "teachers.txt").read_text().splitlines() == _expected(lines, files[:2])


def test_a_killed_run_continues_after_its_last_whole_line_parsing_nothing_twice(tmp_path, teacher_files,
                                                                                 monkeypatch, capsys):
    corpus, lines, files = teacher_files
    monkeypatch.setattr(treenets.workflows.distill, "CHUNK", 7)
    whole = tmp_path / "whole"
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(whole),
                 "--teachers-only"]) == 0
    out = tmp_path / "killed"
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only"]) == 0
    # as a run killed while appending leaves it: 14 whole lines and a torn one
    text = (whole / "teachers.txt").read_text()
    done = text.splitlines(keepends=True)[:14]
    (out / "teachers.txt").write_text("".join(done) + text.splitlines()[14][:5])
    parsed = []
    original = treenets.workflows.distill.Teachers.trees
    monkeypatch.setattr(treenets.workflows.distill.Teachers, "trees",
                        lambda self, chunk, first: parsed.extend(range(first, first + len(chunk))) or
                        original(self, chunk, first))
    capsys.readouterr()
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(out),
                 "--teachers-only"]) == 0
    assert (out / "teachers.txt").read_text() == text
    assert parsed == list(range(14, len(lines)))
    # the count of lines without a tree is the whole file's, the earlier run's lines too (before: this run's)
    empty = sum(not line for line in text.splitlines())
    assert f"distill: {empty:,} of its {len(lines):,} lines without a tree" in capsys.readouterr().err


def test_shards_parsed_apart_are_merged_into_the_same_trees(tmp_path, teacher_files, capsys):
    corpus, lines, files = teacher_files
    out = tmp_path / "sharded"
    common = [*files, "--corpus", str(corpus), "--pretokenized", "--out", str(out)]
    assert main(["distill", *common, "--shard", "2/3"]) == 0
    assert (out / "teachers.shard-2-of-3.txt").is_file() and not (out / "teachers.txt").exists()
    assert main(["distill", *common, "--shard", "1/3"]) == 0
    assert main(["distill", *common, "--teachers-only"]) == 0
    assert "waiting for teachers.shard-3-of-3.txt" in capsys.readouterr().err
    assert main(["distill", *common, "--shard", "3/3"]) == 0
    assert main(["distill", *common, "--teachers-only"]) == 0
    assert (out / "teachers.txt").read_text().splitlines() == _expected(lines, files)
    assert not list(out.glob("teachers.shard-*"))
    with pytest.raises(SystemExit) as exited:
        main(["distill", *common, "--shard", "4/3"])
    assert exited.value.code == 2 and "expected 1 <= K <= N" in capsys.readouterr().err


def test_workers_parse_the_shards_in_processes(tmp_path, teacher_files):
    corpus, lines, files = teacher_files
    out = tmp_path / "workers"
    assert main(["distill", *files, "--corpus", str(corpus), "--pretokenized", "--out", str(out), "--teachers-only",
                 "--workers", "2"]) == 0
    assert (out / "teachers.txt").read_text().splitlines() == _expected(lines, files)


def test_models_teach_a_student_that_parses_and_exports(tmp_path, corpus, student_config, capsys):
    """Two shipped models as teachers over raw text (capitals, numbers, punctuation), the student trained, resumed
    on a second run, exported; its trees drawn by `parse`."""
    out = tmp_path / "student"
    argv = ["distill", "onlstm-ptb-small", "prpn-up-small", "--corpus", str(corpus), "--out", str(out), "--config",
            str(student_config), "--threads", "1", "--no-progress"]
    assert main(argv) == 0
    trees = (out / "teachers.txt").read_text().splitlines()
    assert len(trees) == len(CORPUS) * 5
    assert trees[2] == "" and trees[6] == ""  # an empty line, and one word: no tree
    import treenets

    onlstm, prpn = treenets.load("onlstm-ptb-small"), treenets.load("prpn-up-small")
    first = [onlstm.parse(CORPUS[0]).nested, prpn.parse(CORPUS[0]).nested]
    words = onlstm.parse(CORPUS[0]).words
    spans = [sorted(s for s in node_spans(t)[0] if s[1] - s[0] >= 2) for t in first]
    tree, _ = combine(list(range(len(words))), [nested_from_spans(list(range(len(words))), s) for s in spans])
    assert trees[0] == bracketed(with_words(tree, words))
    assert (out / "run" / "best.pt").is_file()
    capsys.readouterr()
    assert main([*argv, "--set", "train.epochs=3"]) == 0  # the teachers' trees reused, the student resumed
    err = capsys.readouterr().err
    assert "reused" in err and "(resumed)" in err
    assert main(["parse", str(out / "run" / "best.pt"), "--json", "Shares of IBM fell 2 points on Monday."]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["shares", "of", "ibm", "fell", "N", "points", "on", "monday"]
    assert main(["export", str(out / "run" / "best.pt"), str(tmp_path / "folder"), "--threads", "1"]) == 0
    student = treenets.load(str(tmp_path / "folder"))
    parse = student.parse("The cat sat on the mat.", decode="mbr")
    assert parse.words == ["the", "cat", "sat", "on", "the", "mat"] and len(parse.spans) == 5
    # `serve` draws its trees by both decoders (no perplexity: a parser gives none)
    pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2")
    from starlette.testclient import TestClient

    from treenets.workflows.serve import create_app, load_models

    with TestClient(create_app(load_models([str(tmp_path / "folder")]))) as client:
        answer = client.post("/api/parse", json={"sentence": "The cat sat on the mat.", "models": [str(tmp_path /
                                                                                                      "folder")]})
    assert answer.status_code == 200
    result = answer.json()["results"][0]
    assert result["perplexity"] is None and set(result["trees"]) == {"viterbi", "mbr"}
    assert result["trees"]["mbr"]["tree"] == json.loads(tree_json(parse.nested))


def test_bad_input_is_a_clear_error(tmp_path, teacher_files, capsys):
    corpus, lines, files = teacher_files
    short = tmp_path / "short.txt"
    short.write_text("(X a b)\n")
    out = str(tmp_path / "o")
    for argv, message in (
        ([*files[:2], "--corpus", str(tmp_path / "none.txt"), "--out", out], "no such file or folder"),
        ([*files[:2], str(short), "--corpus", str(corpus), "--out", out], "1 lines for a corpus of 40"),
        ([*files[:2], "--corpus", str(corpus), "--out", out, "--shard", "1/2", "--workers", "2"],
         "--shard with --workers"),
        ([*files[:2], "--corpus", str(corpus), "--out", str(corpus)], "a file (the --corpus)"),
    ):
        assert main(["distill", *argv, "--teachers-only", "--pretokenized"]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exited:
        main(["distill", *files[:2], "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--workers", "0"])
    assert exited.value.code == 2 and "--workers" in capsys.readouterr().err


def test_the_students_tree_file_lines_are_read_with_their_words(tmp_path):
    """The task reads a file of trees: labelled or not, one-word and empty lines skipped, n-ary trees made binary."""
    from treenets.tasks.parsing import read_trees

    path = tmp_path / "t.txt"
    path.write_text("(S (NP the cat) (VP sat on it))\n\n(X word)\n(X (X a b) c)\n")
    words, spans, skipped = read_trees(path)
    assert words == [["the", "cat", "sat", "on", "it"], ["a", "b", "c"]] and skipped == 2
    assert sorted(spans[0]) == [(0, 1), (0, 4), (2, 4), (3, 4)] and sorted(spans[1]) == [(0, 1), (0, 2)]
    path.write_text("((a) (b c))\n((a b) c)\n")  # unlabelled: the first line cannot be read labelled
    words, spans, skipped = read_trees(path)
    assert words == [["a", "b", "c"], ["a", "b", "c"]] and skipped == 0
    assert sorted(spans[0]) == [(0, 2), (1, 2)] and sorted(spans[1]) == [(0, 1), (0, 2)]
    path.write_text("(X (X a b) c\n")
    with pytest.raises(TreenetsError, match=f"{path}:1"):
        read_trees(path)


def test_long_sentences_are_parsed_in_smaller_batches_with_the_same_trees(monkeypatch):
    """The student's batches of one length shrink where its span layer ([n, n, mlp] a sentence) would pass
    `BATCH_FLOATS`, and give the same trees."""
    import treenets
    from treenets.predictors import parsing

    student = treenets.load("ptb-distilled")
    sentences = [" ".join(["the cat sat on the mat"] * k) for k in (1, 1, 3, 3, 3, 6)]  # 6, 18 and 36 words
    whole = [parse.nested for parse in student.parse(sentences)]
    batches = []
    forward = student.net.forward

    def counted(tokens, words, lengths):
        batches.append(len(words))
        return forward(tokens, words, lengths)

    monkeypatch.setattr(student.net, "forward", counted)
    monkeypatch.setattr(parsing, "BATCH_FLOATS", 2 * student.net.floats_per_sentence(18))  # two of 18 words
    assert [parse.nested for parse in student.parse(sentences)] == whole
    assert batches == [2, 2, 1, 1]  # 6 words: both; 18: two, then one; 36: one alone (more than the budget)


def test_parse_says_the_student_reads_unknown_words_by_their_characters_too(capsys):
    assert main(["parse", "ptb-distilled", "The quokka sat.", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "    unknown words (read as <unk> and by their characters): quokka\n" in out
    assert main(["parse", "onlstm-ptb-small", "The quokka sat.", "--threads", "1"]) == 0
    assert "    unknown words (read as <unk>): quokka\n" in capsys.readouterr().out  # a language model: <unk> alone
