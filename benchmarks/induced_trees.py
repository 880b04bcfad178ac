"""Do induced trees help a Tree-LSTM? (Williams et al. 2018 asked it of latent-tree models.)

The shipped recipes of the two Tree-LSTM tasks, trained over different trees with the same budget (the
config's 10 epochs, selection on dev):

- SST fine-grained, binary Tree-LSTM (`configs/treelstm-sst-fine.yaml` with `model.emb_size=100`, as the
  shipped `treelstm-sst`): root accuracy and phrase accuracy on test. Over trees other than the treebank's, a
  node has a label where the treebank has a phrase over the same words (`data.trees`); phrase accuracy is
  then over those nodes, so only root accuracy compares across trees.
- SICK relatedness, binary (constituency) Tree-LSTM (`configs/treelstm-sick-constituency.yaml`): Pearson on test.

Trees: `gold` (SST's, SICK's binarised constituency `cparents`), `onlstm` and `prpn` (induced by the shipped
`onlstm-ptb-small` and `prpn-ptb-small`), `right-branching`, `balanced`; and the sequential `lstm` baseline.
The models trained on gold and on ON-LSTM trees are also scored with their test sentences over the ON-LSTM's
trees ("over onlstm trees"): how they do on plain text, where no gold tree exists.
Each run is `treenets train` then `treenets eval best.pt --split test`; the table gives mean ± standard
deviation over the seeds. A finished run (its `test.json`) is kept, an unfinished one resumed, so the script
can be stopped and started again.

    python benchmarks/induced_trees.py --out runs/induced-trees [--seeds 1 2 3] [--threads 1] [--only sst]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

TASKS = {
    "sst": ("configs/treelstm-sst-fine.yaml", ["model.emb_size=100"], "gold", "configs/lstm-sst-fine.yaml",
            ["root_accuracy", "phrase_accuracy", "root_accuracy over onlstm trees"]),
    "sick": ("configs/treelstm-sick-constituency.yaml", [], "constituency", "configs/treelstm-sick-constituency.yaml",
             ["pearson", "pearson over onlstm trees"]),
}
TREES = {
    "gold": None,  # the task's own trees
    "onlstm": ["data.trees=induced", "data.parser=onlstm-ptb-small"],
    "prpn": ["data.trees=induced", "data.parser=prpn-ptb-small"],
    "right-branching": ["data.trees=right-branching"],
    "balanced": ["data.trees=balanced"],
    "lstm": None,
}


def command(task: str, trees: str, seed: int, folder: Path, threads: int) -> list[str]:
    config, settings, gold, lstm_config, _ = TASKS[task]
    if trees == "lstm":
        sets = ["model.name=lstm"] + (["model.emb_size=100"] if task == "sst" else [])
        config = lstm_config
    else:
        sets = settings + (TREES[trees] or [f"data.trees={gold}"])
    args = [sys.executable, "-m", "treenets", "train", config, "--out", str(folder), "--threads", str(threads),
            "--no-progress", "--set", f"train.seed={seed}"]
    for setting in sets:
        args += ["--set", setting]
    if (folder / "last.pt").exists():
        args += ["--resume"]
    return args


def run(task: str, trees: str, seed: int, out: Path, threads: int) -> dict:
    folder = out / f"{task}-{trees}-seed{seed}"
    result = folder / "test.json"
    if not result.exists():
        subprocess.run(command(task, trees, seed, folder, threads), check=True)
        evaluation = subprocess.run([sys.executable, "-m", "treenets", "eval", str(folder / "best.pt"), "--split",
                                     "test"], check=True, capture_output=True, text=True)
        if trees in ("gold", "onlstm"):
            induced = evaluate_over_induced_trees(folder / "best.pt")
        result.write_text(json.dumps({**json.loads(evaluation.stdout.splitlines()[0]), **induced}
                                     if trees in ("gold", "onlstm") else json.loads(evaluation.stdout.splitlines()[0])))
    return json.loads(result.read_text())


def evaluate_over_induced_trees(best: Path) -> dict:
    """The test score of a model when its sentences come as plain text: over the trees the shipped ON-LSTM
    induces, whatever trees it was trained on (what `treenets predict --sentence` gives it)."""
    from treenets.config import saved_config
    from treenets.core import checkpoint
    from treenets.core.vocab import Vocab
    from treenets.predictors import Predictor
    from treenets.tasks import make_task

    saved = checkpoint.load(best)
    config = saved_config(saved, best, ["data.trees=induced", "data.parser=onlstm-ptb-small"])
    predictor = Predictor.from_checkpoint(saved, best)
    metric = make_task(config, Vocab(saved["vocab"]), splits=("test",)).evaluate(predictor.net, "test")
    return {f"{metric.key} over onlstm trees": metric.score}


def table(out: Path, seeds: list[int], tasks: list[str]) -> str:
    lines = []
    for task in tasks:
        metrics = TASKS[task][4]
        lines += [f"\n{task} (test; mean ± sd over the seeds that finished)\n",
                  "| trees | " + " | ".join(metrics) + " | seeds |", "| --- |" + " ---: |" * (len(metrics) + 1)]
        for trees in TREES:
            found = [json.loads(p.read_text()) for seed in seeds
                     if (p := out / f"{task}-{trees}-seed{seed}" / "test.json").exists()]
            if not found:
                continue
            cells = []
            for metric in metrics:
                values = [100 * r[metric] if "accuracy" in metric else r[metric] for r in found if metric in r]
                if not values:
                    cells.append("n/a")
                    continue
                digits = 1 if "accuracy" in metric else 4
                spread = f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else ""
                cells.append(f"{statistics.mean(values):.{digits}f}{spread}")
            lines.append(f"| {trees} | " + " | ".join(cells) + f" | {len(found)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/induced-trees"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=list(TASKS), nargs="+", default=list(TASKS))
    parser.add_argument("--table", action="store_true", help="print the table of the finished runs only")
    args = parser.parse_args()
    if not args.table:
        for seed in args.seeds:  # seed by seed, so that a stopped run still has every kind of tree
            for task in args.only:
                for trees in TREES:
                    run(task, trees, seed, args.out, args.threads)
    print(table(args.out, args.seeds, args.only))


if __name__ == "__main__":
    main()
