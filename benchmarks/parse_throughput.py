"""Parsing throughput: distances + tree building + scoring, batched versus one sentence at a time.

On NLTK WSJ sample sentences with a paper-size ON-LSTM (emb 400, hidden 1150, 3 layers, chunk 10; random
weights: speed does not depend on them). Three ways, each timed end to end (distances of every layer, trees
from layer 2, sentence F1 against the gold trees):

- treenets, batched: sentences sorted by length, batches of `--batch-size`, right padding (`parse-eval`);
- treenets, one sentence at a time (the official loop, with treenets' model);
- the official-style reference model (per-step Python loop, autograd on, as `test_phrase_grammar.py` runs
  it), one sentence at a time.

    python benchmarks/parse_throughput.py [--sentences 1000] [--batch-size 64] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import torch
from lm_throughput import VOCAB, make_models

from treenets.config import build_config
from treenets.core.vocab import Vocab
from treenets.data import data_root
from treenets.data.lm import EOS
from treenets.data.treebanks import TREEBANKS
from treenets.nn.backend import long_job
from treenets.predictors import LanguageModel
from treenets.trees import ParseScores, tree_from_distances
from treenets.trees.ptb import load_gold


def score(sentences, distances):
    scores = ParseScores()
    for sentence, dist in zip(sentences, distances):
        scores.add(tree_from_distances(sentence.words, dist[1].tolist()), sentence.gold)
    return scores.summary()["sentence_f1"]


def batched(lm, sentences, batch_size):
    return score(sentences, lm.distances([s.words for s in sentences], batch_size=batch_size))


def one_at_a_time(lm, sentences):
    return score(sentences, [lm.distances([s.words])[0] for s in sentences])


def reference_one_at_a_time(ref, vocab, sentences):
    distances = []
    for s in sentences:
        ids = torch.tensor(vocab.encode([EOS] + s.words + [EOS])[0]).unsqueeze(1)
        distances.append(ref.distances(ids)[:, 1:-1, 0])
    return score(sentences, distances)


@long_job()  # the kernels it times are built where they are not yet (inference alone runs the PyTorch code)
def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000, help="first N sentences of the sample (0: all)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentences = [s for s in load_gold(data_root() / TREEBANKS["nltk-sample"]) if s.words]
    sentences = sentences[: args.sentences or None]
    words = sorted({w for s in sentences for w in s.words})
    vocab = Vocab(["<unk>", EOS] + words[: VOCAB - 2])
    torch.manual_seed(0)
    net, ref, *_ = make_models("onlstm-paper")
    net, ref = net.eval(), ref.eval()
    lm = LanguageModel(net, vocab, build_config({"task": "lm"}))  # the paper's config: the net's sizes
    ref.load_state_dict({k.replace("embedding", "encoder").replace("rnn.layers", "cells"): v
                         for k, v in net.state_dict().items()})
    runs = [("treenets, batched", lambda: batched(lm, sentences, args.batch_size)),
            ("treenets, one at a time", lambda: one_at_a_time(lm, sentences)),
            ("official-style, one at a time", lambda: reference_one_at_a_time(ref, vocab, sentences))]
    print(f"torch {torch.__version__}, {args.threads} threads, {len(sentences)} sentences "
          f"({sum(len(s.words) for s in sentences)} words), paper-size ON-LSTM, batch {args.batch_size}")
    print(f"{'way':32} {'seconds':>8} {'sent/s':>8} {'F1':>6} {'batched is x faster':>20}")
    times, f1s = [], []
    for name, run in runs:
        start = time.perf_counter()
        f1 = run()
        times.append(time.perf_counter() - start)
        f1s.append(f1)
        print(f"{name:32} {times[-1]:8.1f} {len(sentences) / times[-1]:8.1f} {100 * f1:6.1f} "
              f"{times[-1] / times[0]:20.1f}")
    assert max(f1s) - min(f1s) < 1e-3, f"the three ways disagree: {f1s}"


if __name__ == "__main__":
    main()
