"""A trained masked language model (StructFormer): its constituency trees and dependency heads, and the
pseudo-log-likelihood of sentences.

A sentence is read as `LanguageModel` reads one (normalised into the words of the training text), without boundary
tokens, and parsed alone, as the official evaluation parses (`StructFormer.forward(..., alone=True)`): batches of
sentences give each sentence the tree and heads it has by itself.
"""

from __future__ import annotations

import torch

from treenets.core.errors import TreenetsError
from treenets.nn import precision
from treenets.predictors.base import checked_batch_size, quoted, sentence_list
from treenets.predictors.lm import LanguageModel, SentenceScore
from treenets.predictors.parse import Parse
from treenets.trees.dependencies import heads_from_parents

PAD = "<pad>"


class MaskedLanguageModel(LanguageModel):
    """A StructFormer (or its transformer baseline) with its vocabulary, from `treenets.load`.

    `parse` gives each sentence's constituency tree (StructFormer's `build_tree`: split after the gaps of the
    largest distance, `treenets.trees.tree_from_distances(..., "after")`) and its dependency heads (`Parse.heads`,
    CoNLL's: 1-based, 0 for the root; `treenets.trees.dependencies.heads_from_parents`). `score` gives each token's
    log-probability when it alone is masked (the pseudo-log-likelihood of Salazar et al., 2020; no boundary token).
    """

    splits = ("official",)  # its own builder only

    def _encode_batch(self, sentences: list, tokens: list[list[str]]):
        """Ids and unknown words of each sentence's tokens, and a right-padded `[B, L]` batch (`<pad>`: id 0). A
        `<pad>` in a sentence is read as `<unk>` (as padding it would end the sentence there).

        Raises:
            TreenetsError: for a sentence longer than the position embedding reads.
        """
        longest = max(range(len(tokens)), key=lambda i: len(tokens[i]))
        if self.net.longest is not None and len(tokens[longest]) > self.net.longest:
            raise TreenetsError(f"sentence {quoted(sentences[longest])}: {len(tokens[longest])} tokens, but the "
                                f"model's position embedding reads at most {self.net.longest}")
        rows = []
        for words in tokens:
            ids, _ = self.vocab.encode(words)
            ids = [self.vocab.index[self.vocab.unk] if word == PAD else i for word, i in zip(words, ids)]
            rows.append((ids, self._unknown(words)))
        batch = torch.zeros(len(rows), max(len(ids) for ids, _ in rows), dtype=torch.long)
        for row, (ids, _) in enumerate(rows):
            batch[row, : len(ids)] = torch.tensor(ids)
        return rows, batch.to(self.device)

    def _unknown(self, words: list[str]) -> list[str]:
        """The words read as `<unk>`: those outside the vocabulary, and `<pad>`."""
        return [word for word in words if word not in self.vocab or word == PAD]

    @property
    def num_distance_rows(self) -> int:
        """1: the parser's distances (0 for the transformer baseline, which induces nothing)."""
        return 1 if self.net.induces_structure else 0

    @property
    def default_layer(self) -> int:
        self._require_distances()
        return 1

    @torch.no_grad()
    def _structures(self, sentences: list, tokens: list[list[str]], batch_size: int) -> list[tuple]:
        """Each sentence's `(distance [1, n], height [n], parent [n, n])`, each sentence parsed alone, in batches of
        similar length. They come from the parser alone: the transformer layers, which they gate, are not run."""
        self._require_distances()
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        result = [None] * len(tokens)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            _, batch = self._encode_batch([sentences[i] for i in chunk], [tokens[i] for i in chunk])
            distance, height = self.net.parse(batch, alone=True)
            parent = self.net.structure(batch, distance, height)[0]
            distance, height, parent = distance.cpu(), height.cpu(), parent.cpu()
            for row, index in enumerate(chunk):
                n = len(tokens[index])
                result[index] = distance[row : row + 1, :n], height[row, :n], parent[row, :n, :n]
        return result

    def _distances(self, sentences: list, tokens: list[list[str]], input_gate: bool,
                   batch_size: int) -> list[torch.Tensor]:
        if input_gate:
            raise TreenetsError(f"{type(self.net).__name__} has no input-gate distances")
        return [distance for distance, _, _ in self._structures(sentences, tokens, batch_size)]

    def parse(self, sentences: str | list, layer=None, split: str = "official", batch_size: int = 64,
              pretokenized: bool = False) -> Parse | list[Parse]:
        """The constituency trees and dependency heads the model induces (see the class's doc); `layer` must be 1 or
        the default, `split` `"official"` (StructFormer's own builder). Returns a `Parse` for a string (`.heads` its
        CoNLL heads), else a list of them."""
        if isinstance(sentences, str):
            return self.parse([sentences], layer, split, batch_size, pretokenized)[0]
        if split not in self.splits:
            raise TreenetsError(f"split {split!r}: a StructFormer's trees are built by its own rule (split after the "
                                "gaps of the largest distance); expected 'official'")
        self.layers("default" if layer is None else layer)  # (checks the layer, and that it induces trees)
        sentences, batch_size = sentence_list(sentences), checked_batch_size(batch_size)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        tokens = [words for words, _ in readings]
        return [Parse(words, distance, 1, "after", self._unknown(words), dropped,
                      heads=heads_from_parents(parent, height))
                for (words, dropped), (distance, height, parent) in zip(readings, self._structures(
                    sentences, tokens, batch_size))]

    @torch.no_grad()
    def score(self, sentences: str | list, pretokenized: bool = False) -> SentenceScore | list[SentenceScore]:
        """Each token's log-probability with that token alone masked (the pseudo-log-likelihood; `SentenceScore`
        has no boundary token here). A sentence of n tokens is read n times, in one batch."""
        if isinstance(sentences, str):
            return self.score([sentences], pretokenized)[0]
        sentences = sentence_list(sentences)
        readings = [self._read(sentence, pretokenized) for sentence in sentences]
        mask_id = self.vocab.index["<mask>"]
        scores = []
        for sentence, (words, dropped) in zip(sentences, readings):
            (ids, unknown), = self._encode_batch([sentence], [words])[0]
            tokens = torch.tensor(ids, device=self.device)
            n = len(ids)
            copies = tokens.repeat(n, 1)
            copies[torch.arange(n), torch.arange(n)] = mask_id
            hidden = self.net(copies).hidden[torch.arange(n), torch.arange(n)]
            logp = precision.log_softmax(self.net.output_layer(hidden), dim=-1)
            scores.append(SentenceScore(words, logp[torch.arange(n), tokens].cpu().tolist(), unknown, dropped))
        return scores
