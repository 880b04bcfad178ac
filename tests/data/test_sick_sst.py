"""The staged SICK and SST data: the embedding rows' alignment with the vocabulary, the split sizes; bad SICK scores."""

from __future__ import annotations

import pytest
import torch

from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data.sick import SPECIALS, read_split, read_vocab
from treenets.data.sst import read_trees


def test_sick_embedding_rows_follow_the_vocabulary_after_four_specials(data_root):
    """Row i + 4 of sick_embed.pth is line i of sick.vocab: related words are close only at that offset."""
    matrix = torch.load(data_root / "sick" / "sick_embed.pth", weights_only=True)
    words = (data_root / "sick" / "sick.vocab").read_text().split("\n")
    assert tuple(matrix.shape) == (len(SPECIALS) + len([w for w in words if w]), 300)
    index = {w: i for i, w in enumerate(words)}
    pairs = [("man", "woman"), ("boy", "girl"), ("dog", "cat"), ("guitar", "piano")]

    def mean_cosine(offset):
        vectors = [(matrix[index[a] + offset], matrix[index[b] + offset]) for a, b in pairs]
        return sum(torch.cosine_similarity(u, v, dim=0).item() for u, v in vectors) / len(vectors)

    assert mean_cosine(4) > 0.6
    assert mean_cosine(4) - max(mean_cosine(3), mean_cosine(5)) > 0.25
    assert matrix[0].abs().sum() == 0 and matrix[1].abs().sum() == 0  # <blank>, <unk>


def test_sst_splits_fine_and_binary(data_root):
    folder = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    fine = {split: read_trees(folder / f"{split}.txt", "fine") for split in ("train", "dev", "test")}
    assert [len(fine[s]) for s in ("train", "dev", "test")] == [8544, 1101, 2210]
    assert all(len(t.words) * 2 - 1 == t.size for t in fine["dev"])  # binary trees
    binary = {split: read_trees(folder / f"{split}.txt", "binary") for split in ("train", "dev", "test")}
    assert [len(binary[s]) for s in ("train", "dev", "test")] == [6920, 872, 1821]


@pytest.mark.parametrize("score", ["7", "0.5", "nan", "-inf"])
def test_sick_scores_outside_1_to_5_are_named(tmp_path, score):
    # Before: read as they were; a score of 7 gave a target distribution outside the five classes.
    for side in "ab":
        (tmp_path / f"{side}.toks").write_text("a cat sits\na dog runs\na cat runs\n")
        (tmp_path / f"{side}.parents").write_text("2 3 0\n2 3 0\n2 3 0\n")
    (tmp_path / "sim.txt").write_text(f"1\n5\n{score}\n")
    with pytest.raises(TreenetsError, match=rf"sim.txt:3: relatedness {score} is outside 1-5"):
        read_split(tmp_path, "dependency")
    (tmp_path / "sim.txt").write_text("1\n5\n4.2\n")
    assert [pair.score for pair in read_split(tmp_path, "dependency")] == [1.0, 5.0, 4.2]


def test_a_sick_vocabulary_with_a_word_twice_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "sick.vocab"
    path.write_text("a\nman\n\nplays\nman\n")
    with pytest.raises(TreenetsError, match=r"sick.vocab:5: 'man' again \(already line 2\)"):
        read_vocab(path)
    path.write_text("a\n<unk>\n")
    with pytest.raises(TreenetsError, match=r"sick.vocab:2: '<unk>' again \(already a special token\)"):
        read_vocab(path)
    path.write_text("a\nman\n\nplays\n")
    assert read_vocab(path).words[4:] == ["a", "man", "plays"]
    with pytest.raises(TreenetsError, match=r"duplicate words: 'b' at positions 1 and 3"):
        Vocab(["a", "b", "c", "b"])
