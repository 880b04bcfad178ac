"""StructFormer against its official code, in turns in one run: training and parsing tokens/s.

The official code is imported from a folder the user names, a copy of google-research's `structformer/` package
(`structformer.py`, `layers.py`, `tree_utils.py`, `data_ptb.py`; the repository is large: copy the folder alone):

    python benchmarks/structformer_throughput.py --official PARENT_OF_structformer [--size paper|small]
        [--device cpu|cuda] [--steps 3] [--rounds 2] [--sentences 1346]

Nothing of theirs is copied here or committed. Both models hold the same weights (the official `state_dict` loads
into treenets' model as it is) and read the same sentences.

- Training, a step as the official `main.py` takes it: `mask_data` (30 % of the real tokens), the forward, its
  `CrossEntropyLoss(ignore_index=pad)` over every position's logits, `backward`, `clip_grad_norm_(0.25)`, Adam's
  step; treenets' step is the `mlm` task's (the output layer on the masked positions only, the same loss), then the
  same clipping and step. The same batches of about 4,096 tokens of the PTB training text (the official `batchify`).
- Parsing, as the official `test_phrase_grammar.test` parses a test section: each sentence alone (a batch of one),
  the forward, `tree_utils.build_tree` on its distances and the heads (`argmax(head) + 1`, 0 for the word of
  greatest height); treenets: `MaskedLanguageModel.parse` of the same words (batches of sentences of similar length,
  each parsed as if alone), trees and heads included. The section is WSJ 24 (WSJ 23 is not staged).

Each side runs `--steps` steps (or the whole section) per round, the two sides in turns for `--rounds` rounds; the
table gives each round's tokens/s and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from treenets.core.optim import AdamConfig, make_optimizer
from treenets.core.vocab import Vocab
from treenets.data import data_root
from treenets.data.batching import TokenBudgetBatches
from treenets.data.lm import read_lm_file
from treenets.data.treebanks import resolve_treebank
from treenets.nn.structformer.model import StructFormerConfig
from treenets.predictors.mlm import MaskedLanguageModel
from treenets.tasks.mlm import MASK, PAD, UNK, MaskedLMConfig, mask_tokens, pad_sentences
from treenets.trees.ptb import load_gold

SIZES = {"paper": dict(hidden_size=512, num_layers=8, num_heads=8, parser_layers=3, conv_size=9),
         "small": dict(hidden_size=256, num_layers=4, num_heads=8, parser_layers=3, conv_size=9)}


def official_modules(folder: str):
    """`structformer.structformer` and `structformer.tree_utils` of the official code under `folder`."""
    package = Path(folder).resolve() / "structformer"
    missing = [name for name in ("structformer.py", "layers.py", "tree_utils.py", "data_ptb.py")
               if not (package / name).is_file()]
    if missing:
        sys.exit(f"official code: {package} lacks {', '.join(missing)} (google-research's structformer/ folder)")
    sys.path.insert(0, str(package.parent))
    return importlib.import_module("structformer.structformer"), importlib.import_module("structformer.tree_utils")


def timed(function, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    function()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official", required=True, help="the folder holding the official structformer/ package")
    parser.add_argument("--size", choices=sorted(SIZES), default="paper")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=3, help="training steps per side and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=None, help="parse only the first N sentences of WSJ 24")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    official, tree_utils = official_modules(args.official)
    root = data_root()
    train = read_lm_file(root / "ptb_lm" / "ptb.train.txt")
    vocab = Vocab.from_corpus([[PAD, UNK, MASK], *train], unk=UNK)
    size = SIZES[args.size]
    config = StructFormerConfig(**size)
    torch.manual_seed(0)
    ours = config.build(len(vocab)).to(device)
    theirs = official.StructFormer(size["hidden_size"], size["num_layers"], len(vocab), size["num_heads"], 0.1, 0.0,
                                   False, True, pad=0, n_parser_layers=size["parser_layers"],
                                   conv_size=size["conv_size"], relations=("head", "child")).to(device)
    theirs.load_state_dict(ours.state_dict())
    recipe = MaskedLMConfig(task="mlm").optim
    sentences = [torch.tensor(vocab.encode(s)[0]) for s in train if s]
    budget = TokenBudgetBatches([len(s) for s in sentences], 4096, seed=1111)
    batches = [pad_sentences([sentences[i] for i in budget.next_rows()]) for _ in range(args.steps)]
    masked = [mask_tokens(b, 0.3, vocab.index[MASK], vocab.index[UNK], torch.Generator().manual_seed(k))
              for k, b in enumerate(batches)]
    masked = [(x.to(device), y.to(device)) for x, y in masked]
    tokens_per_round = sum(int((x != 0).sum()) for x, _ in masked)

    def train_theirs(optimizer):
        theirs.train()
        for x, y in masked:
            optimizer.zero_grad()
            output, _ = theirs(x, torch.arange(x.size(1), device=device)[None, :])
            F.cross_entropy(output, y.reshape(-1), ignore_index=0).backward()
            torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), recipe.clip)
            optimizer.step()

    def train_ours(optimizer):
        ours.train()
        for x, y in masked:
            optimizer.zero_grad()
            chosen = y != 0
            logits = ours.output_layer(ours(x).hidden[chosen])
            F.cross_entropy(logits, y[chosen]).backward()
            torch.nn.utils.clip_grad_norm_(ours.parameters(), recipe.clip)
            optimizer.step()

    adam = AdamConfig(lr=recipe.lr, eps=recipe.eps, weight_decay=recipe.weight_decay, clip=recipe.clip)
    optimizers = make_optimizer(adam, theirs, "adam"), make_optimizer(adam, ours, "adam")
    results = {"train official": [], "train treenets": [], "parse official": [], "parse treenets": []}
    gold = [s.words for s in load_gold(resolve_treebank("wsj24", root)) if s.words][: args.sentences]
    parse_tokens = sum(len(words) for words in gold)
    predictor = MaskedLanguageModel(ours, vocab, MaskedLMConfig(task="mlm", model=config), device)

    @torch.no_grad()
    def parse_theirs():
        theirs.eval()
        for words in gold:
            x = torch.tensor([vocab.encode(words)[0]], device=device)
            _, p = theirs(x, torch.arange(len(words), device=device)[None, :])
            distance = p["distance"].squeeze(0).cpu().numpy().tolist()
            height = p["height"].squeeze(0).cpu().numpy().tolist()
            head = p["head"].squeeze(0).cpu().numpy()
            tree_utils.build_tree(distance, words)
            top = max(height)
            [int(row.argmax()) + 1 if h < top else 0 for row, h in zip(head, height)]

    def parse_ours():
        ours.eval()
        predictor.parse(gold, pretokenized=True)

    # the same distances before training (each side then trains its own copy, with its own dropout); treenets' trees
    # and heads from them are checked against the official ones by check-golden
    with torch.no_grad():
        ours.eval(), theirs.eval()
        x = torch.tensor([vocab.encode(gold[0])[0]], device=device)
        _, p = theirs(x, torch.arange(x.size(1), device=device)[None, :])
        difference = (p["distance"] - ours(x, alone=True).distance).abs().max().item()
    assert difference < 1e-3, f"the two models' distances differ by {difference}"
    for _ in range(args.rounds):
        results["train official"].append(tokens_per_round / timed(lambda: train_theirs(optimizers[0]), device))
        results["train treenets"].append(tokens_per_round / timed(lambda: train_ours(optimizers[1]), device))
        results["parse official"].append(parse_tokens / timed(parse_theirs, device))
        results["parse treenets"].append(parse_tokens / timed(parse_ours, device))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"StructFormer ({args.size}: {size}), {name}, torch {torch.__version__}; training: {args.steps} batches of "
          f"about 4,096 tokens ({tokens_per_round:,} tokens) a round; parsing: WSJ 24, {len(gold):,} sentences "
          f"({parse_tokens:,} words); {args.rounds} rounds, the sides in turns")
    print("| what | official tokens/s (each round) | treenets tokens/s (each round) | treenets / official |")
    print("| --- | --- | --- | --- |")
    for what in ("train", "parse"):
        a, b = results[f"{what} official"], results[f"{what} treenets"]
        print(f"| {what} | {', '.join(f'{v:,.0f}' for v in a)} | {', '.join(f'{v:,.0f}' for v in b)} | "
              f"{statistics.median(b) / statistics.median(a):.2f} |")


if __name__ == "__main__":
    main()
