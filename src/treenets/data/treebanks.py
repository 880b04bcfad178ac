"""Treebanks for unsupervised parsing: the staged ones by name (their sentences, preprocessed as the official
evaluation does, come from `treenets.trees.ptb.load_gold`)."""

from __future__ import annotations

from pathlib import Path

from treenets import data
from treenets.errors import TreenetsError

# Short names for the treebanks staged under the data root.
TREEBANKS = {
    "nltk-sample": "nltk_data/corpora/treebank/combined",  # WSJ sections 00-01, 10% sample, 3,914 trees
    "wsj22": "wsj_trees/22.auto.clean",  # WSJ section 22, 1,700 trees
    "wsj24": "wsj_trees/dev_24.LDC99T42",  # WSJ section 24, 1,346 trees
}


def resolve_treebank(spec: str, root=None) -> Path:
    """A treebank path: one of `TREEBANKS`, an existing path, or a path under the data root."""
    if spec in TREEBANKS:
        return data.resolve(TREEBANKS[spec], root)
    path = Path(spec).expanduser()
    if path.exists() or path.is_absolute():
        return path
    under_root = data.resolve(spec, root)
    if under_root.exists():
        return under_root
    raise TreenetsError(f"--treebank {spec}: not found (a path, a path under the data root, or one of "
                        f"{', '.join(TREEBANKS)})")
