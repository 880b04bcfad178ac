"""The data the checkpoints of this folder were trained on, written again for the tests that load and resume them
(`tests/test_saved_checkpoints.py`): small logic, ListOps, SST and SICK folders under one data root, the checkpoints'
`data.path`s relative to it."""

from __future__ import annotations

from pathlib import Path

from helpers import write_logic

from treenets.data.listops import generate

# the order of the relations the saved runs' formulas were drawn with
LABELS = ("=", "<", ">", "^", "v", "|", "#")


def write_data(root: Path, shared: Path) -> Path:
    """`root` holding `logic/`, `listops/`, `sst/` (the first sentences of SST's splits in `shared`, the data root)
    and `sick/` (the first pairs of SICK's splits, its vocabulary)."""
    write_logic(root / "logic", pairs_per_file=8, labels=LABELS)
    generate(root / "listops", train=96, test=16, seed=2)
    source = shared / "sst" / "trainDevTestTrees_PTB" / "trees"
    (root / "sst").mkdir(parents=True)
    for split, count in (("train", 30), ("dev", 10), ("test", 10)):
        lines = (source / f"{split}.txt").read_text().splitlines()[:count]
        (root / "sst" / f"{split}.txt").write_text("\n".join(lines) + "\n")
    for split, count in (("train", 24), ("dev", 8), ("test", 8)):
        (root / "sick" / split).mkdir(parents=True)
        for name in ("a.toks", "b.toks", "a.parents", "b.parents", "a.cparents", "b.cparents", "sim.txt"):
            lines = (shared / "sick" / split / name).read_text().splitlines()[:count]
            (root / "sick" / split / name).write_text("\n".join(lines) + "\n")
    (root / "sick" / "sick.vocab").write_text((shared / "sick" / "sick.vocab").read_text())
    return root
