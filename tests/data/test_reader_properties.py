"""Property tests of the file readers: random bytes, and valid files with random mutations (a character or a
bracket deleted, inserted or duplicated, two tokens swapped, the file cut short), are read or refused with a
`TreenetsError`, never another exception. Each `@example` is an input that once escaped as another exception."""

from __future__ import annotations

import pickle
import re
import struct

import yaml
from helpers import tiny_config
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from treenets.config import load_config
from treenets.core.errors import TreenetsError
from treenets.data.lm import read_char_lm_file, read_lm_file
from treenets.data.logic import parse_formula, read_logic_file
from treenets.data.sick import read_split, read_vocab
from treenets.data.sst import read_trees
from treenets.data.syneval import read_templates
from treenets.trees.ptb import load_gold

PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# What mutations insert: brackets, white space of every kind (str.splitlines also splits on \x85 and \u2028),
# numbers and labels of every range, NUL, bytes that are not UTF-8, a byte-order mark, and each format's keywords.
PIECES = [b"(", b")", b" ", b"\t", b"\n", b"\r", b"\x0c", "\x85".encode(), "\u2028".encode(), b"0", b"3", b"-1",
          b"5", b"9" * 25, b"1e309", b"nan", b"a", "\u00e9".encode(), b"\x00", b"\xff", "\ufeff".encode(), b"<eos>",
          b"not", b"and", b"_", b":", b"- ", b"{", b"[", b"&x", b"*x", b"!!python/object:os.system"]


@st.composite
def mutated(draw, valid: bytes) -> bytes:
    """`valid` after one to four random edits."""
    data = valid
    for _ in range(draw(st.integers(1, 4))):
        edit = draw(st.sampled_from(["delete", "delete bracket", "insert", "duplicate", "swap", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if edit == "delete":
            data = data[:at] + data[at + 1 :]
        elif edit == "delete bracket":
            brackets = [m.start() for m in re.finditer(rb"[()]", data)]
            if brackets:
                at = draw(st.sampled_from(brackets))
                data = data[:at] + data[at + 1 :]
        elif edit == "insert":
            data = data[:at] + draw(st.sampled_from(PIECES)) + data[at:]
        elif edit == "duplicate":
            end = draw(st.integers(at, min(len(data), at + 12)))
            data = data[:end] + data[at:end] + data[end:]
        elif edit == "swap":
            parts = re.split(rb"(\s+)", data)
            tokens = [i for i, part in enumerate(parts) if part and not part.isspace()]
            if len(tokens) >= 2:
                i, j = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
                parts[i], parts[j] = parts[j], parts[i]
                data = b"".join(parts)
        else:
            data = data[:at]
    return data


def inputs(valid: bytes):
    return st.one_of(st.binary(max_size=300), mutated(valid))


def read_or_refuse(read, *args):
    """Call a reader: success and `TreenetsError` are both fine; any other exception fails the test."""
    try:
        return read(*args)
    except TreenetsError:
        return None


PTB = b"""( (S
    (NP-SBJ (NNP Pierre) (NNP Vinken) )
    (, ,)
    (VP (MD will) (VP (VB join) (NP (DT the) (NN board) ) (NP-TMP (NNP Nov.) (CD 29) )))
    (. .) ))
( (S (NP-SBJ (-NONE- *) ) (VP (VBZ is) (ADJP-PRD (JJ 1990-style) ) ) (. .) ))
(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))
"""


@PROPERTIES
@given(inputs(PTB))
@example(b"( (S (NP (DT the) (NN )) (VP (VBD sat))) )")  # IndexError: a preterminal without its word
def test_treebank_files(tmp_path, data):
    path = tmp_path / "wsj.mrg"
    path.write_bytes(data)
    read_or_refuse(load_gold, path)  # read, and preprocessed as the parsing evaluation does


SST = b"""(3 (2 It) (4 (4 (2 's) (4 (3 (2 a) (4 (3 lovely) (2 film))) (3 (2 with) (4 (3 (3 lovely) (2 performances))
 (2 (2 by) (2 (2 (2 Buy) (2 and)) (2 Accorsi))))))) (2 .)))
(2 (2 (2 No) (2 one)) (1 (1 (2 goes) (1 (2 (2 unindicted) (2 here)) (2 ,))) (2 (2 which) (3 (2 is) (2 (2 probably)
 (3 (2 for) (3 (2 the) (2 best))))))))
(1 (2 -LRB-) (1 (1 terrible) (2 -RRB-)))
""".replace(b"\n ", b" ")


@PROPERTIES
@given(inputs(SST), st.sampled_from(["fine", "binary"]))
@example(b"\x80", "fine")  # UnicodeDecodeError
def test_sst_files(tmp_path, data, classes):
    path = tmp_path / "train.txt"
    path.write_bytes(data)
    read_or_refuse(read_trees, path, classes)


SICK = {
    "a.toks": b"A group of kids is playing\nThe young boys are playing\n",
    "b.toks": b"A group of boys is playing\nThe kids are playing outdoors\n",
    "a.parents": b"2 6 2 3 6 0\n3 3 5 5 0\n",
    "b.parents": b"2 6 2 3 6 0\n2 4 4 0 4\n",
    "a.cparents": b"7 7 8 8 9 9 10 10 11 11 0\n6 6 7 7 8 8 9 9 0\n",
    "b.cparents": b"7 7 8 8 9 9 10 10 11 11 0\n6 6 7 7 8 8 9 9 0\n",
    "sim.txt": b"4.5\n3.2\n",
}


@PROPERTIES
@given(st.sampled_from(sorted(SICK)).flatmap(lambda name: st.tuples(st.just(name), inputs(SICK[name]))),
       st.sampled_from(["dependency", "constituency"]))
@example(("a.parents", b"\x80"), "dependency")  # UnicodeDecodeError
def test_sick_files(tmp_path, changed, trees):
    for file, valid in SICK.items():
        (tmp_path / file).write_bytes(valid)
    name, data = changed
    (tmp_path / name).write_bytes(data)
    read_or_refuse(read_split, tmp_path, trees)


@PROPERTIES
@given(inputs(b"a\nman\nplays\n"))
@example(b"\x80")  # UnicodeDecodeError
def test_sick_vocabularies(tmp_path, data):
    path = tmp_path / "sick.vocab"
    path.write_bytes(data)
    read_or_refuse(read_vocab, path)


@PROPERTIES
@given(inputs(b" the cat sat on the mat \n a <unk> of N dollars \n"))
def test_word_text_files(tmp_path, data):
    path = tmp_path / "ptb.train.txt"
    path.write_bytes(data)
    read_or_refuse(read_lm_file, path)


@PROPERTIES
@given(inputs(b" t h e _ c a t _ s a t \n a _ < u n k > \n "))
def test_character_text_files(tmp_path, data):
    path = tmp_path / "ptb.char.train.txt"
    path.write_bytes(data)
    read_or_refuse(read_char_lm_file, path)


LOGIC = b"<\t( a ( and b ) )\ta\n=\t( not ( not c ) )\tc\n|\t( d ( or ( not e ) ) )\t( not f )\n"


@PROPERTIES
@given(inputs(LOGIC))
def test_logic_files(tmp_path, data):
    path = tmp_path / "train3"
    path.write_bytes(data)
    read_or_refuse(read_logic_file, path)


@PROPERTIES
@given(st.one_of(st.text(max_size=60), mutated(b"( ( a ( and b ) ) ( or ( not c ) ) )").map(
    lambda data: data.decode("utf-8", "replace"))))
def test_logic_formulas(text):
    read_or_refuse(parse_formula, text, "formula")


TEMPLATES = {"sing_MS_MV": [("the author laughs", "the author laugh"), ("the pilot swims", "the pilot swim")],
             "plur_MS_MV": [("the authors laugh", "the authors laughs")]}


def deep_pickle(levels: int) -> bytes:
    """The pickle of `{"c": [("a b", [[...["x"]...]])]}`, the list `levels` deep (written op by op: `pickle.dumps`
    itself recurses once per level)."""
    def text(value: str) -> bytes:
        return b"X" + struct.pack("<I", len(value)) + value.encode()

    nested = b"]" * levels + text("x") + b"a" * levels  # EMPTY_LIST each level, the word, APPEND each level
    return b"\x80\x02}" + text("c") + b"]" + text("a b") + nested + b"\x86as."  # TUPLE2, APPEND, SETITEM, STOP


@PROPERTIES
@given(st.one_of(st.binary(max_size=300), *(mutated(pickle.dumps(TEMPLATES, protocol)) for protocol in (0, 2, 4))))
@example(b"\x80\x00\x95\x00\x00\x00\x00\x00\x00\x00\x80")  # OverflowError: FRAME length exceeds the maximum
@example(deep_pickle(100_000))  # RecursionError: repr of the nested list in the error message
def test_syneval_pickles(tmp_path, data):
    path = tmp_path / "simple_agrmt.pickle"
    path.write_bytes(data)
    read_or_refuse(read_templates, path)


SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.binary(max_size=4)
PLAIN = st.recursive(SCALARS,
                     lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3), max_leaves=12)


@PROPERTIES
@given(PLAIN)
def test_syneval_pickles_of_any_plain_data(tmp_path, value):
    path = tmp_path / "simple_agrmt.pickle"
    path.write_bytes(pickle.dumps(value))
    read_or_refuse(read_templates, path)


CONFIG = yaml.safe_dump(tiny_config("corpus"), sort_keys=False).encode()


@PROPERTIES
@given(inputs(CONFIG))
@example(b"\x80")  # UnicodeDecodeError
def test_config_files(tmp_path, data):
    path = tmp_path / "tiny.yaml"
    path.write_bytes(data)
    read_or_refuse(load_config, path)
