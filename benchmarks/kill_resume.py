"""`kill -9` of `treenets train` at random moments: is `last.pt` always loadable, and does the run resume?

Trains a tiny ON-LSTM language model (the test suite's corpus and config, a checkpoint every few milliseconds
of training so that kills land in the middle of writes), kills it with SIGKILL at `--kills` random moments
(each up to `--max-delay` seconds after the process wrote its first checkpoint), checks after each kill that `last.pt`
loads, resumes it with `treenets train --resume`, and finally lets the last resumed run finish
`--final-steps` more steps. Prints a markdown table: the moment of each kill, the step `last.pt` holds after
it, whether the kill hit a checkpoint write (it left the temporary file), whether `last.pt` loaded, and the
step the resumed run then reached.

    python benchmarks/kill_resume.py [--kills 10] [--seed 0] [--max-delay 3] > kill_resume.md

The same experiment, with 4 kills, is `tests/test_faults.py`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import kill_and_resume  # noqa: E402 - the experiment the tests run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-delay", type=float, default=3.0, help="seconds after a checkpoint, at most")
    parser.add_argument("--final-steps", type=int, default=50)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        records = kill_and_resume(Path(folder), args.kills, args.seed, args.max_delay, args.final_steps)
    print(f"`kill -9` of `treenets train` at {args.kills} random moments (seed {args.seed}), each resumed with "
          f"`treenets train --resume`; the last resumed run trained {args.final_steps} more steps and finished.\n")
    print("| kill | moment (s after the run's first checkpoint) | hit a write | last.pt step | loadable | "
          "resumed to step |")
    print("|---:|---:|:---:|---:|:---:|---:|")
    for number, record in enumerate(records, start=1):
        print(f"| {number} | {record['delay']:.2f} | {'yes' if record['mid_write'] else 'no'} | {record['step']} | "
              f"{'yes' if record['loadable'] else 'NO'} | {record['resumed']} |")
    loadable = sum(record["loadable"] for record in records)
    print(f"\n{loadable} of {len(records)} kills left a loadable last.pt; {time.monotonic() - started:.0f} s in all.")


if __name__ == "__main__":
    main()
