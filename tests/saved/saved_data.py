"""The data the checkpoints of this folder were trained on, written again for the tests that load and resume them
(`tests/test_saved_checkpoints.py`): small logic, ListOps, SST and SICK folders under one data root, the checkpoints'
`data.path`s relative to it."""

from __future__ import annotations

import random
from pathlib import Path

from treenets.data.listops import generate

LABELS = ["=", "<", ">", "^", "v", "|", "#"]


def write_logic(folder: Path) -> None:
    """train0..train12, test0..test12: eight pairs of random formulas each, random relations."""
    rng = random.Random(0)

    def formula(ops: int) -> str:
        if ops == 0:
            return rng.choice("abcdef")
        if rng.random() < 0.3:
            return f"( not {formula(ops - 1)} )"
        left = rng.randint(0, ops - 1)
        return f"( {formula(left)} ( {rng.choice(['and', 'or'])} {formula(ops - 1 - left)} ) )"

    folder.mkdir(parents=True)
    for kind in ("train", "test"):
        for n in range(13):
            lines = [f"{rng.choice(LABELS)}\t{formula(n)}\t{formula(rng.randint(0, n))}" for _ in range(8)]
            (folder / f"{kind}{n}").write_text("\n".join(lines) + "\n")


def write_data(root: Path, shared: Path) -> Path:
    """`root` holding `logic/`, `listops/`, `sst/` (the first sentences of SST's splits in `shared`, the data root)
    and `sick/` (the first pairs of SICK's splits, its vocabulary)."""
    write_logic(root / "logic")
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
