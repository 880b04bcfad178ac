"""A word <-> id mapping that is stored in checkpoints as a plain list of words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from treenets.core.errors import TreenetsError


class Vocab:
    """Words in id order, with an optional unknown-word token.

    Args:
        words: the words, id = position; no duplicates.
        unk: the token that stands for words outside the vocabulary (must be in `words`), or None if
            unknown words are an error.
    """

    def __init__(self, words: Sequence[str], unk: str | None = "<unk>"):
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            word = next(w for i, w in enumerate(self.words) if self.index[w] != i)
            raise TreenetsError(f"vocabulary has duplicate words: {word!r} at positions {self.words.index(word)} and "
                                f"{self.index[word]} (counted from 0)")
        if unk is not None and unk not in self.index:
            unk = None
        self.unk = unk

    @classmethod
    def from_corpus(cls, sentences: Iterable[Sequence[str]], unk: str | None = "<unk>") -> Vocab:
        """Words in order of first appearance (the order of the official AWD-LSTM/ON-LSTM dictionary)."""
        seen: dict[str, None] = {}
        for sentence in sentences:
            seen.update(dict.fromkeys(sentence))
        return cls(list(seen), unk=unk)

    @classmethod
    def most_frequent(cls, sentences: Sequence[Sequence[str]], size: int, unk: str = "<unk>") -> Vocab:
        """The `size` most frequent words of `sentences` (ties: the first seen), `unk` always among them (added
        where the text has none: every other word is read as it), in the order first seen."""
        counts = Counter(word for sentence in sentences for word in sentence)
        counts[unk] += 0
        order = {word: i for i, word in enumerate(dict.fromkeys([*(w for s in sentences for w in s), unk]))}
        kept = sorted(counts, key=lambda w: (w != unk, -counts[w], order[w]))[:size]
        return cls(sorted(kept, key=order.__getitem__), unk=unk)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def encode(self, tokens: Sequence[str]) -> tuple[list[int], list[str]]:
        """Ids of `tokens`, and the tokens that were not in the vocabulary (mapped to `unk`).

        Raises:
            TreenetsError: on an unknown token when the vocabulary has no unknown-word token.
        """
        ids, unknown = [], []
        for token in tokens:
            i = self.index.get(token)
            if i is None:
                if self.unk is None:
                    raise TreenetsError(f"token {token!r} is not in the vocabulary, which has no unknown token")
                unknown.append(token)
                i = self.index[self.unk]
            ids.append(i)
        return ids, unknown
