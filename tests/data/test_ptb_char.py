"""Reading Mikolov's character-level PTB files (`ptb.char.*`): counts on the staged data, the lone space at
the end of the files, and word-level files refused with the file, line and token."""

from __future__ import annotations

import pytest

from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data.lm import EOS, read_char_lm_file, read_lm_file

# shared/data/README.md, section 8: lines, characters (space-separated symbols) per split.
PTB_CHAR_COUNTS = {"train": (42068, 4975414), "valid": (3370, 389672), "test": (3761, 438662)}


def test_ptb_char_counts_alphabet_and_sentences(data_root):
    sentences = {split: read_char_lm_file(data_root / "ptb_char" / f"ptb.char.{split}.txt")
                 for split in PTB_CHAR_COUNTS}
    for split, (lines, characters) in PTB_CHAR_COUNTS.items():
        assert len(sentences[split]) == lines, split  # the final lone space is no extra sentence
        assert sum(map(len, sentences[split])) == characters + lines, split  # one <eos> per line
    assert sum(map(len, sentences["train"])) == 5017482
    vocab = Vocab.from_corpus(sentences["train"], unk="<unk>")
    assert len(vocab) == 50 and EOS in vocab and vocab.unk is None  # 49 symbols + <eos>; <unk> is spelled out
    assert set("abcdefghijklmnopqrstuvwxyz0123456789_#$&'*-./<>N\\") == set(vocab.words) - {EOS}
    for split in ("valid", "test"):
        assert {c for s in sentences[split] for c in s} <= set(vocab.words), split
    # The same sentences as the word-level files, spelled out with `_` between words.
    words = read_lm_file(data_root / "ptb_lm" / "ptb.train.txt")
    assert ["".join(s[:-1]) for s in sentences["train"]] == ["_".join(s[:-1]) for s in words]


def test_the_lone_space_after_the_last_line_is_not_a_sentence(tmp_path):
    path = tmp_path / "ptb.char.train.txt"
    path.write_text("a _ b \n \n c \n ")  # Mikolov's layout; the middle line is an empty sentence
    assert read_char_lm_file(path) == [["a", "_", "b", EOS], [EOS], ["c", EOS]]
    path.write_text("a _ b \n c")  # no final line break: the last line is a sentence
    assert read_char_lm_file(path) == [["a", "_", "b", EOS], ["c", EOS]]


def test_a_word_level_file_is_refused_naming_file_line_and_token(tmp_path):
    path = tmp_path / "ptb.train.txt"
    path.write_text(" a \n the cat \n")
    with pytest.raises(TreenetsError) as info:
        read_char_lm_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:2: token 'the' is not one character; expected characters separated by "
                              "spaces")
    assert "ptb.char.* format" in message and "\n" not in message


def test_a_missing_character_file_says_how_to_fetch_it(tmp_path):
    with pytest.raises(TreenetsError, match="missing .*`treenets data download ptb-char`"):
        read_char_lm_file(tmp_path / "ptb.char.train.txt")
