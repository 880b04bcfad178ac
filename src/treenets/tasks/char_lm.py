"""Character-level language modelling on Mikolov's character-level Penn Treebank (`ptb.char.*`), as in the
PRPN paper (Shen et al., 2018, section 6.1): the word-level task (`treenets.tasks.lm`) read over characters.

Each line is a sentence spelled out, its characters separated by spaces and `_` between words; `<eos>` is
appended to every line and the stream is read as the word-level task reads words (windows of about `bptt`
characters, the hidden state carried from window to window). Metric: bits per character.

The vocabulary is the training file's characters and `<eos>` (50 symbols for PTB), without an unknown
symbol: Mikolov's preprocessing already spelled rare words as `< u n k >`, and every character of the valid
and test files occurs in training. A character outside the training set is therefore an error that names it
(and the file and line of a data file) rather than an input read through an embedding that never trained.
Text given to the predictor is normalised like the word-level model's, then spelled out (`split_words`).
"""

from __future__ import annotations

from typing import Literal

from treenets.data.lm import WORD_BOUNDARY, read_char_lm_file
from treenets.tasks import register
from treenets.tasks.lm import LMConfig, LMTask, PTBDataConfig
from treenets.tasks.metrics import BitsPerCharacter


class CharPTBDataConfig(PTBDataConfig):
    """A character-level corpus in Mikolov's format: one sentence per line, characters separated by spaces."""

    path: str = "ptb_char"  # folder, relative to the data root unless absolute
    train: str = "ptb.char.train.txt"
    valid: str = "ptb.char.valid.txt"
    test: str = "ptb.char.test.txt"


class CharLMConfig(LMConfig):
    task: Literal["char-lm"]
    data: CharPTBDataConfig = CharPTBDataConfig()


@register
class CharLMTask(LMTask):
    """Language modelling on a character stream; its predictor spells sentences out."""

    name = "char-lm"
    Config = CharLMConfig
    Metric = BitsPerCharacter
    units = "characters"
    token_unit = "character"
    read_corpus = staticmethod(read_char_lm_file)
    level = "char"

    @staticmethod
    def split_words(words: list[str]) -> list[str]:
        """The characters of the words with `_` between them, as the corpus spells a sentence."""
        return list(WORD_BOUNDARY.join(words))
