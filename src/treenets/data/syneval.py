"""Marvin & Linzen (2018) targeted syntactic evaluation: the published minimal pairs of
BeckyMarvin/LM_syneval (`syneval/EMNLP2018/templates/*.pickle` under the data root), grouped into the rows
of the ON-LSTM paper's Table 3.

Each pickle maps a condition name (e.g. `sing_MS_MV`) to a list of items. An agreement or reflexive item
is a pair `(grammatical, ungrammatical)`. An NPI item is a triple `(grammatical, intrusive, ungrammatical)`,
LM_syneval's names for the three positions: in `npi_across_*` the second sentence has its licensor inside
the relative clause, where it does not license the NPI (`the authors that no security guards like have
ever ...`), and the third has none (`most authors that ... have ever ...`); in `simple_npi_*` there is no
clause to hold an intrusive licensor, so the second sentence starts with `the` and the third with `most`.
LM_syneval's `analyze_results.py` reports every pairwise comparison of a triple; treenets reports the two
that involve the grammatical sentence, the case's headline first: Marvin & Linzen illustrate simple NPIs with
`no students have ever ...` / `*most students have ever ...` (against the ungrammatical sentence) and NPIs
across a relative clause with the misplaced licensor (against the intrusive one).

The pickles are read by an unpickler that refuses every global (a class, a function, a code object), so a
tampered file cannot run code; only dicts, lists, tuples and strings load.
"""

from __future__ import annotations

import os
import pickle
import reprlib
from dataclasses import dataclass
from pathlib import Path

from treenets.core.errors import TreenetsError
from treenets.data import resolve

TEMPLATES = "syneval/EMNLP2018/templates"  # under the data root


@dataclass(frozen=True)
class Case:
    """One row of the ON-LSTM paper's Table 3."""

    name: str  # the command-line name
    label: str  # the row as the paper prints it
    files: tuple[str, ...]  # pickle names (without .pickle) under TEMPLATES
    against: tuple[str, ...] = ("ungrammatical",)  # what the grammatical sentence is compared with, by position
    headline: str = "ungrammatical"  # the comparison the paper's row reports (the first of the results)

    @property
    def size(self) -> int:
        """Sentences per item: 2 for a pair, 3 for an NPI triple."""
        return 1 + len(self.against)


_NPI = ("intrusive", "ungrammatical")

# Ordered as the paper's Table 3.
CASES = (
    Case("simple", "Simple", ("simple_agrmt",)),
    Case("sent_comp", "In a sentential complement", ("sent_comp",)),
    Case("vp_coord", "Short VP coordination", ("vp_coord",)),
    Case("long_vp_coord", "Long VP coordination", ("long_vp_coord",)),
    Case("prep", "Across a PP", ("prep_anim", "prep_inanim")),
    Case("subj_rel", "Across a subject RC", ("subj_rel",)),
    Case("obj_rel_across", "Across an object RC", ("obj_rel_across_anim", "obj_rel_across_inanim")),
    Case("obj_rel_no_comp_across", "Across an object RC (no that)",
         ("obj_rel_no_comp_across_anim", "obj_rel_no_comp_across_inanim")),
    Case("obj_rel_within", "In an object RC", ("obj_rel_within_anim", "obj_rel_within_inanim")),
    Case("obj_rel_no_comp_within", "In an object RC (no that)",
         ("obj_rel_no_comp_within_anim", "obj_rel_no_comp_within_inanim")),
    Case("reflexive_simple", "Reflexive: simple", ("simple_reflexives",)),
    Case("reflexive_sent_comp", "Reflexive: in a sentential complement", ("reflexive_sent_comp",)),
    Case("reflexive_across", "Reflexive: across a RC", ("reflexives_across",)),
    Case("npi_simple", "NPI: simple", ("simple_npi_anim", "simple_npi_inanim"), _NPI),
    Case("npi_across", "NPI: across a RC", ("npi_across_anim", "npi_across_inanim"), _NPI, headline="intrusive"),
)


def select_cases(names: list[str] | None = None) -> list[Case]:
    """The cases called `names` in Table 3 order (all of them for None or an empty list)."""
    known = {case.name: case for case in CASES}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise TreenetsError(f"unknown syneval case {unknown[0]!r}: expected one of {', '.join(known)}")
    return [case for case in CASES if not names or case.name in names]


Item = tuple[str, ...]  # (grammatical, ungrammatical) or (grammatical, intrusive, ungrammatical)


@dataclass
class CaseItems:
    """A case's items, per condition of each of its files (`file:condition`)."""

    case: Case
    conditions: dict[str, list[Item]]

    @property
    def items(self) -> list[Item]:
        return [item for items in self.conditions.values() for item in items]


class _DataOnlyUnpickler(pickle.Unpickler):
    """Loads dicts, lists, tuples and strings; any global (class, function, code object) is refused."""

    def find_class(self, module, name):
        raise _GlobalRefused(f"{module}.{name}")


class _GlobalRefused(pickle.UnpicklingError):
    pass


def read_templates(path: str | os.PathLike, size: int | None = None) -> dict[str, list[Item]]:
    """One LM_syneval pickle: condition name -> items, every item a tuple of `size` (2 or 3; any of them
    for None, the same throughout the file) non-empty sentences.

    Raises:
        TreenetsError: naming the file (and condition and item) for a missing file, a file that is not a
            pickle or is truncated, a pickle that refers to any global, or another structure.
    """
    path = Path(path)
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected a Marvin & Linzen template pickle; see the data README, "
                            "syneval/)")
    try:
        with open(path, "rb") as fh:
            data = _DataOnlyUnpickler(fh).load()
    except _GlobalRefused as exc:
        raise TreenetsError(f"{path}: the pickle refers to {exc}; refused (only dicts, lists, tuples and strings "
                            "are loaded, never classes, functions or code objects)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            UnicodeDecodeError, MemoryError, OverflowError) as exc:
        raise TreenetsError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); expected a "
                            "Marvin & Linzen template pickle") from None
    origin = "for this case"
    expected = "a dict of condition name -> list of (grammatical, ungrammatical[, ...]) tuples of sentences"
    if not isinstance(data, dict) or not data:
        what = f"a {type(data).__name__}" if data else "an empty dict"
        raise TreenetsError(f"{path}: holds {what}; expected {expected}")
    for condition, items in data.items():
        # reprlib: a value of the pickle may nest deeper than `repr` recurses, or be huge.
        where = f"{path}: condition {reprlib.repr(condition)}"
        if not isinstance(condition, str):
            raise TreenetsError(f"{where}: a key of type {type(condition).__name__}; expected {expected}")
        if not isinstance(items, list) or not items:
            what = f"a {type(items).__name__}" if items else "an empty list"
            raise TreenetsError(f"{where}: holds {what}; expected a non-empty list of tuples of sentences")
        for index, item in enumerate(items):
            at = f"{where}, item {index}"
            if not isinstance(item, tuple) or len(item) not in (2, 3):
                shape = f"a tuple of {len(item)}" if isinstance(item, tuple) else f"a {type(item).__name__}"
                raise TreenetsError(f"{at}: {shape}; expected a tuple of 2 or 3 sentences")
            if size is None:
                size, origin = len(item), "as the file's first item"
            elif len(item) != size:
                raise TreenetsError(f"{at}: a tuple of {len(item)} sentences; expected {size} {origin}")
            for sentence in item:
                if not isinstance(sentence, str) or not sentence.strip():
                    raise TreenetsError(f"{at}: {reprlib.repr(sentence)}; expected a non-empty sentence (str)")
    return data


def templates_folder(root: str | os.PathLike | None = None) -> Path:
    """The folder of the template pickles under the data root."""
    folder = resolve(TEMPLATES, root)
    if not folder.is_dir():
        raise TreenetsError(f"{folder}: missing (expected the Marvin & Linzen templates, EMNLP2018/templates/"
                            "*.pickle of BeckyMarvin/LM_syneval; see the data README, syneval/)")
    return folder


def load_case(case: Case, root: str | os.PathLike | None = None, limit: int | None = None) -> CaseItems:
    """A case's items from its pickles; with `limit`, only the first `limit` items of each condition."""
    folder = templates_folder(root)
    conditions = {}
    for name in case.files:
        for condition, items in read_templates(folder / f"{name}.pickle", case.size).items():
            conditions[f"{name}:{condition}"] = items[:limit] if limit is not None else items
    return CaseItems(case, conditions)
