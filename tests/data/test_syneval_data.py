"""Marvin & Linzen template pickles: a data-only unpickler, structure checks naming the file, the case table."""

from __future__ import annotations

import collections
import os
import pickle
from pathlib import Path

import pytest

from treenets.core.errors import TreenetsError
from treenets.data.syneval import CASES, TEMPLATES, load_case, read_templates, select_cases

PAIRS = {"sing": [("the author laughs", "the author laugh")], "plur": [("the authors laugh", "the authors laughs")]}


def _write(path: Path, payload: bytes) -> Path:
    path.write_bytes(payload)
    return path


class _TouchOnLoad:
    """Unpickled by plain `pickle.load`, this would call `Path.touch` (any callable works the same way)."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return Path.touch, (self.target,)


def test_valid_pickles_load_with_either_protocol(tmp_path):
    for protocol in (0, 3):
        path = _write(tmp_path / f"p{protocol}.pickle", pickle.dumps(PAIRS, protocol=protocol))
        assert read_templates(path) == PAIRS


@pytest.mark.parametrize("payload", [
    pickle.dumps(os.system),  # a reference to a function
    pickle.dumps(collections.OrderedDict(PAIRS)),  # a class instance, however harmless
    pickle.dumps({"sing": [("a b", os.getcwd)]}, protocol=0),  # deep inside a valid-looking structure
])
def test_a_pickle_that_refers_to_any_global_is_refused_naming_the_file(tmp_path, payload):
    path = _write(tmp_path / "evil.pickle", payload)
    with pytest.raises(TreenetsError, match=r"evil\.pickle: the pickle refers to .*; refused .*code objects"):
        read_templates(path)


def test_nothing_a_pickle_asks_to_call_runs(tmp_path):
    target = tmp_path / "touched"
    path = _write(tmp_path / "evil.pickle", pickle.dumps({"sing": [_TouchOnLoad(target)]}))
    with pytest.raises(TreenetsError, match="pathlib.Path.touch; refused"):
        read_templates(path)
    assert not target.exists()


@pytest.mark.parametrize("payload, message", [
    (b"", "not a readable pickle"),
    (b"hello, world\n", "not a readable pickle"),
    (pickle.dumps(PAIRS, protocol=3)[:-6], "not a readable pickle"),  # truncated
    (pickle.dumps(PAIRS, protocol=0)[:-3], "not a readable pickle"),
])
def test_a_file_that_is_not_a_whole_pickle_is_named(tmp_path, payload, message):
    path = _write(tmp_path / "bad.pickle", payload)
    with pytest.raises(TreenetsError, match=rf"bad\.pickle: {message}"):
        read_templates(path)


@pytest.mark.parametrize("data, message", [
    ([("a b", "a c")], r"holds a list; expected a dict of condition name"),
    ({}, r"holds an empty dict; expected a dict"),
    ({1: [("a b", "a c")]}, r"condition 1: a key of type int"),
    ({"c": "a b"}, r"condition 'c': holds a str; expected a non-empty list of tuples"),
    ({"c": []}, r"condition 'c': holds an empty list"),
    ({"c": [["a b", "a c"]]}, r"condition 'c', item 0: a list; expected a tuple of 2 or 3 sentences"),
    ({"c": [("a b",)]}, r"condition 'c', item 0: a tuple of 1; expected a tuple of 2 or 3"),
    ({"c": [("a b", "a c", "a d", "a e")]}, r"condition 'c', item 0: a tuple of 4; expected a tuple of 2 or 3"),
    ({"c": [("a b", "a c")], "d": [("a b", "a c"), ("a", "b", "c")]},
     r"condition 'd', item 1: a tuple of 3 sentences; expected 2 as the file's first item"),
    ({"c": [("a b", "  ")]}, r"condition 'c', item 0: '  '; expected a non-empty sentence"),
    ({"c": [("a b", 3)]}, r"condition 'c', item 0: 3; expected a non-empty sentence"),
])
def test_a_wrong_structure_is_named_with_condition_and_item(tmp_path, data, message):
    path = _write(tmp_path / "shape.pickle", pickle.dumps(data))
    with pytest.raises(TreenetsError, match=rf"shape\.pickle: {message}"):
        read_templates(path)


def test_pairs_where_a_case_needs_triples_are_refused(tmp_path):
    folder = tmp_path / TEMPLATES
    folder.mkdir(parents=True)
    _write(folder / "simple_npi_anim.pickle", pickle.dumps(PAIRS))
    npi = select_cases(["npi_simple"])[0]
    with pytest.raises(TreenetsError, match=r"simple_npi_anim\.pickle: condition 'sing', item 0: a tuple of 2 "
                                            "sentences; expected 3 for this case"):
        load_case(npi, tmp_path)


def test_missing_folder_and_file_are_named(tmp_path):
    simple = select_cases(["simple"])[0]
    with pytest.raises(TreenetsError, match=r"syneval/EMNLP2018/templates: missing \(expected the Marvin & Linzen"):
        load_case(simple, tmp_path)
    (tmp_path / TEMPLATES).mkdir(parents=True)
    with pytest.raises(TreenetsError, match=r"simple_agrmt\.pickle: missing"):
        load_case(simple, tmp_path)


def test_limit_keeps_the_first_items_of_each_condition(tmp_path):
    folder = tmp_path / TEMPLATES
    folder.mkdir(parents=True)
    data = {"sing": [(f"s{i} a", f"s{i} b") for i in range(4)], "plur": [(f"p{i} a", f"p{i} b") for i in range(3)]}
    _write(folder / "simple_agrmt.pickle", pickle.dumps(data))
    loaded = load_case(select_cases(["simple"])[0], tmp_path, limit=2)
    assert loaded.conditions == {"simple_agrmt:sing": data["sing"][:2], "simple_agrmt:plur": data["plur"][:2]}
    assert loaded.items == data["sing"][:2] + data["plur"][:2]


def test_cases_follow_table_3_and_unknown_names_list_the_valid_ones():
    names = [case.name for case in CASES]
    assert names == ["simple", "sent_comp", "vp_coord", "long_vp_coord", "prep", "subj_rel", "obj_rel_across",
                     "obj_rel_no_comp_across", "obj_rel_within", "obj_rel_no_comp_within", "reflexive_simple",
                     "reflexive_sent_comp", "reflexive_across", "npi_simple", "npi_across"]
    assert [c.name for c in select_cases(["npi_across", "simple"])] == ["simple", "npi_across"]
    assert select_cases(None) == select_cases([]) == list(CASES)
    assert [c.size for c in CASES].count(3) == 2
    with pytest.raises(TreenetsError, match="unknown syneval case 'agreement': expected one of simple, sent_comp, "
                                            "vp_coord, .*, npi_simple, npi_across$"):
        select_cases(["simple", "agreement"])


def test_the_published_templates_load_with_their_counts(data_root):
    folder = data_root / TEMPLATES
    used = [name for case in CASES for name in case.files]
    assert sorted(used) == sorted(p.stem for p in folder.glob("*.pickle")) and len(used) == 22
    simple = read_templates(folder / "simple_agrmt.pickle")
    assert {k: len(v) for k, v in simple.items()} == {"sing_MS_MV": 70, "plur_MS_MV": 70}
    assert simple["sing_MS_MV"][0] == ("the author laughs", "the author laugh")
    npi = read_templates(folder / "simple_npi_anim.pickle")
    assert sum(len(v) for v in npi.values()) == 120 and all(len(item) == 3 for v in npi.values() for item in v)
    assert npi["past"][0] == ("no authors have ever been popular", "the authors have ever been popular",
                              "most authors have ever been popular")
    counts = {case.name: len(load_case(case, data_root).items) for case in CASES}
    assert counts["simple"] == 140 and counts["prep"] == 16_800 + 5_600 and counts["npi_simple"] == 120 + 144
    assert counts["obj_rel_within"] == 2 * 11_200 and counts["reflexive_across"] == 22_400
    assert sum(counts.values()) == 163_124
