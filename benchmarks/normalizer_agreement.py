"""How often the text normalisers (`treenets.text`) turn a raw sentence into exactly the words of the training
text: over the NLTK WSJ sample (sections 00-01, 3,914 sentences), whose sentences are in Mikolov's PTB
training text.

Each sentence's raw text is rebuilt from its gold tokens: empty elements (`-NONE-` leaves, traces) dropped,
the treebank's escapes undone (`-LRB-` -> `(`, `\\/` -> `/`), the period the treebank doubles after an
abbreviation ending the sentence (`Corp. .`) dropped, and the tokens joined by nltk's
`TreebankWordDetokenizer`.

- `ptb`: the sentence's line of `ptb_lm/ptb.train.txt` is found by its words of letters only that are in the
  PTB vocabulary (a key that neither numbers, punctuation nor rare words enter), the nearest such line to the
  sentence's place in the sample when several match (the sample opens the training text, in order); the
  normalised words, those outside the vocabulary read as `<unk>` as the model reads them, are compared with
  that line.
- `treebank`: the normalised words are compared with the words the parsing evaluation keeps from the gold tree
  (`treenets.trees.tree_words`).

The rules of `ptb` follow the conventions of `ptb.train.txt`, which holds these sentences: the figure says how
closely the normaliser reproduces Mikolov's text for the text it was made from (Wall Street Journal prose), not
how it fares on English of other kinds. The 8 sentences left unmatched have no word of letters in the
vocabulary (`@`, a name) or are lists that the PTB text orders otherwise.

    python benchmarks/normalizer_agreement.py [--data DIR] [--show 10]
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from dataclasses import dataclass

from nltk.tokenize.treebank import TreebankWordDetokenizer

from treenets.data import resolve
from treenets.data.lm import UNK, read_lm_file
from treenets.data.treebanks import resolve_treebank
from treenets.text import ptb_words, treebank_words
from treenets.trees import tree_words
from treenets.trees.ptb import load_gold

UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}
LETTERS = re.compile(r"[a-z]+")


def raw_text(tree) -> str:
    """The sentence of a gold tree as plain text."""
    tokens = [UNESCAPE.get(word, word).replace("\\/", "/").replace("\\*", "*")
              for word, tag in tree.pos() if tag != "-NONE-"]
    if len(tokens) > 1 and tokens[-1] == "." and tokens[-2].endswith("."):  # `Corp. .`: one period in the text
        tokens.pop()
    return TreebankWordDetokenizer().detokenize(tokens)


def letter_key(words, vocab) -> tuple[str, ...]:
    """The words of letters only, lower-cased, that are in the vocabulary: what a sentence and its line share."""
    return tuple(w for w in (w.lower() for w in words) if LETTERS.fullmatch(w) and w in vocab)


@dataclass
class Agreement:
    sentences: int  # of the sample
    matched: int  # of those, found in ptb.train.txt
    ptb_exact: int  # of those, normalised by `ptb` into exactly their line
    treebank_exact: int  # of the sample, normalised by `treebank` into exactly the gold tree's kept words
    examples: dict[str, list[str]]  # per normaliser, its first disagreements (the text, its words, the gold ones)


def measure(root=None, examples: int = 0) -> Agreement:
    """Both normalisers over the NLTK WSJ sample under the data root `root` (see the module's docstring)."""
    sentences = load_gold(resolve_treebank("nltk-sample", root))
    lines = [line[:-1] for line in read_lm_file(resolve("ptb_lm/ptb.train.txt", root))]  # without <eos>
    vocab = {w for line in lines for w in line}
    by_key = defaultdict(list)
    for number, line in enumerate(lines):
        by_key[letter_key(line, vocab)].append(number)
    result = Agreement(len(sentences), 0, 0, 0, {"ptb": [], "treebank": []})

    def disagree(name, text, ours, theirs):
        if len(result.examples[name]) < examples:
            result.examples[name].append(f"  text: {text}\n  ours: {' '.join(ours)}\n  gold: {' '.join(theirs)}")

    for position, sentence in enumerate(sentences):
        text = raw_text(sentence.tree)
        gold = tree_words(sentence.tree)
        words = treebank_words(text)
        result.treebank_exact += words == gold
        if words != gold:
            disagree("treebank", text, words, gold)
        key = letter_key([w for w, tag in sentence.tree.pos() if tag != "-NONE-"], vocab)
        candidates = by_key.get(key) if key else None
        if not candidates:
            continue
        line = lines[min(candidates, key=lambda number: abs(number - position))]
        result.matched += 1
        words = [w if w in vocab else UNK for w in ptb_words(text)]
        result.ptb_exact += words == line
        if words != line:
            disagree("ptb", text, words, line)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", metavar="DIR", help="data root (default: $TREENETS_DATA, else ../shared/data)")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print the first N disagreements of each")
    args = parser.parse_args()
    result = measure(args.data, args.show)
    print(f"ptb: {result.sentences:,} sentences of the NLTK WSJ sample, {result.matched:,} matched to a line of "
          f"ptb.train.txt; normalised words equal to the line: {result.ptb_exact:,} of {result.matched:,} "
          f"({100 * result.ptb_exact / result.matched:.1f} %)")
    for example in result.examples["ptb"]:
        print(example)
    print(f"treebank: normalised words equal to the gold tree's kept words: {result.treebank_exact:,} of "
          f"{result.sentences:,} ({100 * result.treebank_exact / result.sentences:.1f} %)")
    for example in result.examples["treebank"]:
        print(example)


if __name__ == "__main__":
    main()
