"""Treebanks for unsupervised parsing: the staged ones by name, and `GoldTreebank`, the sentences an evaluation
scores against (read and preprocessed as the official evaluation does by `treenets.trees.ptb.load_gold`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from treenets import data
from treenets.core.errors import TreenetsError
from treenets.trees.evaluation import check_scorable
from treenets.trees.ptb import WORD_RULES, GoldSentence, WordRule, length_limit, load_gold

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


@dataclass(frozen=True)
class GoldTreebank:
    """The gold trees that induced trees are scored against, as `treenets parse-eval` and `baselines` name them:
    the treebank `name` (one of `TREEBANKS`, a path, or a path under the data root), only its sentences of at
    most 10 words with `wsj10`, and as words the leaves that the rule `words` of `WORD_RULES` keeps, the POS tags
    `drop_tags` dropped too; with `max_length`, only its sentences of at most that many words."""

    name: str
    wsj10: bool = False
    words: str = "ptb"
    drop_tags: tuple[str, ...] = ()
    max_length: int | None = None

    @property
    def rule(self) -> WordRule:
        """Which leaves are words."""
        rule = WORD_RULES[self.words]
        return rule.dropping(self.drop_tags) if self.drop_tags else rule

    def read(self, root=None, scored: bool = True) -> tuple[Path, list[GoldSentence]]:
        """Its path and sentences; an error when no sentence has a phrase to score (`check_scorable`) unless its
        trees are not `scored` (an ensemble of its sentences' trees needs only the sentences)."""
        path = resolve_treebank(self.name, root)
        sentences = load_gold(path, wsj10=self.wsj10, rule=self.rule, max_length=self.max_length)
        if scored:
            check_scorable(sentences, self.where(path))
        return path, sentences

    @property
    def length_limit(self) -> int | None:
        """The most words a sentence scored may have (10 for WSJ10), or None."""
        return length_limit(self.wsj10, self.max_length)

    def where(self, path: Path) -> str:
        """Its `path` as messages name it, ` (WSJ10)` or ` (at most N words)` added when only short sentences are
        scored."""
        limit = self.length_limit
        return f"{path}{'' if limit is None else ' (WSJ10)' if limit == 10 else f' (at most {limit} words)'}"

    def describe_words(self) -> str:
        """Which leaves are words, as a line of the evaluation's output: `words: ptb (Penn Treebank word ...)`."""
        return f"words: {self.rule.name} ({self.rule.summary})"
