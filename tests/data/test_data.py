"""Corpus reading, batching, the data root, and the dataset registry (no network: file:// URLs)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from treenets import data
from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data.lm import BPTTStream, StreamColumns, read_char_lm_file, read_lm_file
from treenets.data.logic import LABELS, read_logic_file
from treenets.data.sick import SPECIALS, read_vocab
from treenets.data.sst import read_trees
from treenets.trees.ptb import read_treebank


def test_ptb_counts_and_vocabulary(data_root):
    folder = data_root / "ptb_lm"
    train = read_lm_file(folder / "ptb.train.txt")
    vocab = Vocab.from_corpus(train)
    assert len(vocab) == 10000
    assert sum(map(len, train)) == 929589
    assert sum(map(len, read_lm_file(folder / "ptb.valid.txt"))) == 73760
    assert sum(map(len, read_lm_file(folder / "ptb.test.txt"))) == 82430
    assert vocab.words[:3] == ["aer", "banknote", "berlitz"]  # order of first appearance, as the official code


@pytest.mark.parametrize("reader", [read_lm_file, read_char_lm_file], ids=["words", "characters"])
@pytest.mark.parametrize("content,message", [
    (b"", "no tokens"),
    (b" \n ", "no tokens"),
    (b"\x00\x01binary", "binary"),
    (b"a \n\xff\xfe not utf8\n", ":2: not UTF-8"),
    (b" a b\n c\td\n", ":2: tab"),
    (b"(S (NP (DT the)))\n", ":1: looks like a bracketed tree"),
    (b" a b <eos>\n", ":1: contains <eos>"),
])
def test_malformed_corpus_files_are_named(tmp_path, reader, content, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(TreenetsError, match=message) as info:
        reader(path)
    assert str(path) in str(info.value)


def test_missing_corpus_file(tmp_path):
    with pytest.raises(TreenetsError, match="missing"):
        read_lm_file(tmp_path / "nope.txt")


def _reshaped(stream: np.ndarray, batch_size: int) -> torch.Tensor:
    """The official `batchify`: the stream reshaped into `batch_size` columns, time-major."""
    rows = len(stream) // batch_size
    return torch.from_numpy(stream[: rows * batch_size].reshape(batch_size, rows).T.copy())


def test_stream_columns_read_as_the_stream_reshaped_into_columns():
    stream = np.arange(23)
    columns = StreamColumns(stream, 4)
    assert (columns.size(0), columns.size(1)) == (5, 4)
    assert columns[0:5][:, 1].tolist() == [5, 6, 7, 8, 9]  # each column is a contiguous piece of the stream
    assert torch.equal(columns[1:4], _reshaped(stream, 4)[1:4])
    assert torch.equal(StreamColumns(stream, 4, rank=1, world=2)[0:5], _reshaped(stream, 4)[:, 2:])
    assert torch.equal(StreamColumns(stream, 4, offset=3)[0:5], _reshaped(stream[3:], 4))
    assert torch.equal(StreamColumns(stream, 4, id_map=np.arange(23) * 2)[0:2], _reshaped(stream, 4)[:2] * 2)
    with pytest.raises(TreenetsError, match="too few"):
        StreamColumns(np.arange(3), 4)
    with pytest.raises(TreenetsError, match="divisible"):
        StreamColumns(stream, 4, world=3)
    with pytest.raises(TreenetsError, match=r"corpus \(test\): id 19 in a vocabulary of 10"):
        StreamColumns(stream, 4, vocab_size=10, where="corpus (test)")[0:5]


@pytest.mark.parametrize("variable", [False, True])
def test_windows_cover_every_target_once(variable):
    columns = StreamColumns(np.arange(2000), 4)
    stream = BPTTStream(columns, bptt=20, variable=variable, seed=3)
    targets, lengths = [], []
    while (w := stream.next_window()) is not None:
        assert torch.equal(w.target[:-1], w.input[1:])
        targets.append(w.target)
        lengths.append(w.input.size(0))
    assert torch.equal(torch.cat(targets), _reshaped(np.arange(2000), 4)[1:])
    if variable:
        assert min(lengths[:-1]) >= 5 and len(set(lengths)) > 3
    else:
        assert set(lengths[:-1]) == {20}


def test_stream_state_restores_position_and_lengths():
    columns = StreamColumns(np.arange(5000), 4)
    a = BPTTStream(columns, bptt=30, variable=True, seed=1)
    for _ in range(5):
        a.next_window()
    saved = a.state_dict()
    expected = [a.next_window().input for _ in range(5)]
    b = BPTTStream(columns, bptt=30, variable=True, seed=99)
    b.load_state_dict(saved)
    for want in expected:
        assert torch.equal(b.next_window().input, want)


def test_data_root_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path))
    assert data.data_root() == tmp_path.resolve()
    assert data.data_root(tmp_path / ".") == tmp_path.resolve()
    with pytest.raises(TreenetsError, match="does not exist"):
        data.data_root(tmp_path / "absent")
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "absent"))
    with pytest.raises(TreenetsError, match=r"^TREENETS_DATA=.*absent: does not exist \(TREENETS_DATA must name a "):
        data.data_root()


def test_a_data_root_that_is_a_file_is_named_as_such(tmp_path, monkeypatch, capsys):
    """Before: `data check --data FILE` said "does not exist", and `data download --data FILE/x` "Not a directory"."""
    from treenets.cli import main

    file = tmp_path / "file"
    file.write_text("mine")
    what = "must name a folder: the data root, which holds ptb_lm/, sick/, ...)"
    for argv, problem in ((["data", "check", "--data", str(file)], "a file, not a folder"),
                          (["data", "download", "sick", "--data", str(file / "x")],
                           f"lies under {file}, which is a file, not a folder"),
                          (["data", "listops", "--data", str(file)], "a file, not a folder"),
                          (["train", "lstm-logic", "--data", str(file)], "a file, not a folder")):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"treenets: error: --data {argv[-1]}: {problem} (--data {what}\n", argv
    monkeypatch.setenv(data.ENV_VAR, str(file))
    assert main(["data", "check"]) == 2
    assert capsys.readouterr().err == f"treenets: error: TREENETS_DATA={file}: a file, not a folder (TREENETS_DATA " \
                                      f"{what}\n"
    assert file.read_text() == "mine"


def test_staged_ptb_files_pass_the_check(data_root):
    statuses = data.check(["ptb"], data_root)
    assert [s.status for s in statuses] == ["ok", "ok", "ok"]


def _fake_registry(monkeypatch, tmp_path, payload: bytes, sha: str):
    source = tmp_path / "remote" / "file.txt"
    source.parent.mkdir()
    source.write_bytes(payload)
    entry = data.DataFile(dataset="demo", path="demo/file.txt", bytes=len(payload), sha256=sha,
                          url=source.as_uri())
    monkeypatch.setattr(data, "registry", lambda: {"demo": [entry]})


def test_download_verifies_the_checksum(tmp_path, monkeypatch):
    payload = b"hello treenets\n"
    _fake_registry(monkeypatch, tmp_path, payload, hashlib.sha256(payload).hexdigest())
    root = tmp_path / "root"
    data.download(["demo"], root, log=lambda *_: None)
    assert (root / "demo/file.txt").read_bytes() == payload
    assert [s.status for s in data.check(["demo"], root)] == ["ok"]
    (root / "demo/file.txt").write_bytes(b"hello treenetz\n")
    assert [s.status for s in data.check(["demo"], root)] == ["wrong sha256"]


def test_download_refuses_a_wrong_checksum_and_leaves_nothing(tmp_path, monkeypatch):
    _fake_registry(monkeypatch, tmp_path, b"tampered\n", "0" * 64)
    root = tmp_path / "root"
    with pytest.raises(TreenetsError, match="sha256"):
        data.download(["demo"], root, log=lambda *_: None)
    assert list((root / "demo").iterdir()) == []
    with pytest.raises(TreenetsError, match="unknown dataset"):
        data.download(["nope"], root)


def test_registry_lists_every_staged_file():
    files = data.registry()
    assert set(files) == {"ptb", "treebank-sample", "wsj-trees", "sst", "sick", "logic", "syneval", "ptb-char"}
    assert (len(files["logic"]), len(files["syneval"]), len(files["ptb-char"])) == (26, 23, 3)
    for entries in files.values():
        for f in entries:
            assert len(f.sha256) == 64 and f.url.startswith("https://")
    assert json.loads(data._REGISTRY.read_text())["datasets"]["ptb"][0]["bytes"] > 0


@pytest.mark.parametrize("reader,text,first", [  # reader: the words (tokens, relation) of the file's first item
    (lambda path: read_lm_file(path)[0], "the cat\n", "the"),
    (lambda path: read_char_lm_file(path)[0], "t h e _ c a t\n", "t"),
    (lambda path: read_vocab(path).words[len(SPECIALS):], "the\ncat\n", "the"),
    (lambda path: read_treebank(path)[0][0].leaves(), "( (S (NP (DT the) (NN cat))) )\n", "the"),
    (lambda path: [LABELS[read_logic_file(path)[0].label]], "=\ta\ta\n", "="),
    (lambda path: read_trees(path, "fine")[0].words, "(3 (2 the) (3 cat))\n", "the"),
], ids=["words", "characters", "sick-vocab", "treebank", "logic", "sst"])
def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path, reader, text, first):
    # Before: the mark stuck to the first word ("\ufeffthe"), or made the first line malformed.
    path = tmp_path / "file.txt"
    path.write_bytes(("\ufeff" + text).encode("utf-8"))
    assert reader(path)[0] == first
