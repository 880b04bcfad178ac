"""Reading a run's `metrics.jsonl` and drawing its learning curve."""

from __future__ import annotations

import json
from pathlib import Path

from treenets.errors import TreenetsError


def read_metrics(run: str | Path) -> list[dict]:
    """The records of `run/metrics.jsonl` (or of the file itself), in order."""
    path = Path(run)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise TreenetsError(f"{path}: no metrics file")
    records = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise TreenetsError(f"{path}:{lineno}: not a JSON record ({exc.msg})") from None
    return records


def plot_curve(records: list[dict], out: str | Path) -> None:
    """Training and validation perplexity against optimizer steps, on a log scale, to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in records if r["event"] == "train" and "ppl" in r]
    valid = [r for r in records if r["event"] == "eval" and r.get("split") == "valid"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in train], [r["ppl"] for r in train], label="train (running)", alpha=0.6)
    ax.plot([r["step"] for r in valid], [r["ppl"] for r in valid], "o-", label="validation")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("perplexity")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
