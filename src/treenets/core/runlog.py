"""A run's metrics log: `metrics.jsonl` (one JSON record per log line and evaluation, mirrored to TensorBoard
when it is installed), read back, printed (`treenets metrics`) and drawn as a learning curve; figures written
for people."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from treenets.core.errors import TreenetsError
from treenets.core.files import plot_file, read_text


def format_figure(value) -> str:
    """A figure for people, as the training log, `treenets metrics`, model cards and `treenets models` print it:
    4 decimals below 10 (Pearson, accuracy, bits per character), else 2 (perplexity, F1 in percent); counts as
    they are; None (no figure yet) as `n/a`."""
    if value is None:
        return "n/a"
    if not isinstance(value, float):
        return str(value)
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


class MetricsLog:
    """Appends one JSON object per line to `metrics.jsonl`; mirrors scalars to TensorBoard if installed."""

    def __init__(self, path: Path, enabled: bool):
        self.path, self.enabled, self.writer = path, enabled, None
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                pass
            else:
                self.writer = SummaryWriter(str(path.parent / "tensorboard"))

    def repair(self) -> str | None:
        """Cut a last line that a killed run left unfinished (it is not JSON), so that appending goes on after
        whole records; what was done, or None."""
        if not self.enabled or not self.path.is_file():
            return None
        raw = self.path.read_bytes()
        if not raw or raw.endswith(b"\n"):
            return None
        last_start = raw.rfind(b"\n") + 1
        try:
            json.loads(raw[last_start:])
        except ValueError:
            os.truncate(self.path, last_start)  # in place: the whole records before it are never rewritten
            return f"{self.path}: its last line was cut short (the run was killed while writing it): removed"
        with open(self.path, "ab") as fh:
            fh.write(b"\n")
        return None

    def write(self, record: dict) -> None:
        if not self.enabled:
            return
        # Strict JSON: a non-finite number (a diverged loss) is written as null, not as a bare NaN.
        record = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)  # the run folder was deleted: make it again
        with open(self.path, "a") as fh:
            fh.write(json.dumps(record, allow_nan=False) + "\n")
        if self.writer is not None:
            prefix = record["event"] if record["event"] == "train" else record.get("split", record["event"])
            for key, value in record.items():
                if isinstance(value, (int, float)) and key not in ("step", "epoch"):
                    self.writer.add_scalar(f"{prefix}/{key}", value, record["step"])
            self.writer.flush()


RECORD_KEYS = {"train": ("step", "epoch"), "eval": ("step", "epoch", "split")}  # what the readers of each event use


def read_metrics(run: str | Path) -> list[dict]:
    """The records of `run/metrics.jsonl` (or of the file itself), in order."""
    path = Path(run)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise TreenetsError(f"{path}: no metrics file")
    records = []
    for lineno, line in enumerate(read_text(path, "a metrics.jsonl file").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TreenetsError(f"{path}:{lineno}: not a JSON record ({exc.msg})") from None
        needed = ("event", *RECORD_KEYS.get(record.get("event"), ())) if isinstance(record, dict) else None
        if needed is None or any(key not in record for key in needed):
            raise TreenetsError(f"{path}:{lineno}: not a metrics record (expected a JSON object with an 'event'; "
                                "train records have step and epoch, eval records also split)")
        records.append(record)
    return records


def print_metrics(run: str | Path, plot: str | Path | None = None) -> None:
    """`treenets metrics`: print every evaluation of `run` (a run folder or its `metrics.jsonl`), one line each,
    and with `plot` draw the learning curve to that PNG file (`plot_curve`)."""
    if plot:
        plot_file(plot, "--plot")
    records = read_metrics(run)
    if plot and not records:
        raise TreenetsError(f"--plot: {run} holds no records yet, so there is no curve to draw")
    evals = [r for r in records if r["event"] == "eval"]
    skip = {"event", "step", "epoch", "split", "averaged"}
    print(f"{'step':>8} {'epoch':>6} {'split':>6}  metrics")
    for r in evals:
        values = "  ".join(f"{k} {format_figure(v)}" for k, v in r.items() if k not in skip and isinstance(v, float))
        print(f"{r['step']:8d} {r['epoch']:6d} {r['split']:>6}  {values}")
    if plot:
        plot_curve(records, plot)
        print(f"plot: {plot}")


def learning_curve(records: list[dict]) -> dict:
    """What `plot_curve` draws: `key`, the validation figure that selects the model (the `key` each evaluation
    records: the task's metric, e.g. a perplexity, a perplexity's bound, Pearson, accuracy; `loss` in a log that
    names none); `valid`, its (step, value) points; `train`, the running training figure's where the training log
    has the same one (a language model's perplexity), else the training loss's, and `beside` whether it is the
    same figure (one axis) or the loss (a second axis); `log`, whether the figure spans ten times or more from its
    least to its largest (a log scale)."""
    valid = [r for r in records if r["event"] == "eval" and r.get("split") == "valid"]
    train = [r for r in records if r["event"] == "train"]
    key = valid[0].get("key", "loss") if valid else "loss"
    points = [(r["step"], r[key]) for r in valid if isinstance(r.get(key), float)]
    running = [(r["step"], r[key]) for r in train if isinstance(r.get(key), float)]
    values = [v for _, v in points + running]
    return {"key": key, "valid": points, "beside": bool(running),
            "train": running or [(r["step"], r["loss"]) for r in train if isinstance(r.get("loss"), float)],
            "log": bool(running) and min(values) > 0 and max(values) >= 10 * min(values)}


def plot_curve(records: list[dict], out: str | Path) -> None:
    """The learning curve against optimizer steps (`learning_curve`), to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = learning_curve(records)
    key = curve["key"]
    fig, ax = plt.subplots(figsize=(7, 4))
    if curve["beside"]:  # the running training figure beside validation's
        ax.plot(*zip(*curve["train"]), label="train (running)", alpha=0.6)
        ax.set_yscale("log" if curve["log"] else "linear")
    elif curve["train"]:
        twin = ax.twinx()
        twin.plot(*zip(*curve["train"]), color="tab:gray", alpha=0.5)
        twin.set_ylabel("training loss")
    if curve["valid"]:
        ax.plot(*zip(*curve["valid"]), "o-", color="tab:orange", label=f"validation {key}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(key)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def format_breakdown(title: str, breakdowns: dict[str, dict[str, float]]) -> str:
    """A table of a metric by group: one row per group (`title` heads the column), one column per model."""
    groups = list(dict.fromkeys(g for values in breakdowns.values() for g in values))
    names = list(breakdowns)
    width = max(len(title), *(len(g) for g in groups))
    widths = [max(len(name), 7) for name in names]
    lines = [f"{title:>{width}}  " + "  ".join(f"{name:>{w}}" for name, w in zip(names, widths))]
    for group in groups:
        cells = [f"{breakdowns[n][group]:{w}.4f}" if group in breakdowns[n] else f"{'-':>{w}}"
                 for n, w in zip(names, widths)]
        lines.append(f"{group:>{width}}  " + "  ".join(cells))
    return "\n".join(lines)


def plot_breakdown(title: str, key: str, breakdowns: dict[str, dict[str, float]], out: str | Path) -> None:
    """A metric (`key`) by group (`title`, e.g. operators), one line per model, to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(g for values in breakdowns.values() for g in values))
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, values in breakdowns.items():
        shown = [g for g in groups if g in values]
        ax.plot([groups.index(g) for g in shown], [values[g] for g in shown], "o-", label=name)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlabel(title)
    ax.set_ylabel(key)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
