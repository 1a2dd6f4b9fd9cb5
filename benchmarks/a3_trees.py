"""Time a3's per-student beam cases (`_beam_domain_cases`, a cold cache per seed) in this
checkout against another checkout of the repo, alternating runs in one call.

    python benchmarks/a3_trees.py /path/to/other/checkout [--seeds 30] [--rounds 3]

Each run is a fresh interpreter with its checkout first on sys.path; the medians over the
seeds are printed per run, then the ratio of the medians of all runs."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from checkouts import timed_in  # benchmarks/checkouts.py, beside this script

HERE = Path(__file__).resolve().parent.parent

TIMER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from grader.suites.a3_gated_seq2seq import decoding
times = []
for seed in range(int(sys.argv[2])):
    decoding._beam_cases.cache_clear()
    t = time.perf_counter()
    decoding._beam_domain_cases(seed)
    times.append(time.perf_counter() - t)
print(json.dumps({"file": decoding.__file__, "times": times}))
"""


def _run(checkout: Path, seeds: int) -> list[float]:
    """The per-seed times of one fresh interpreter importing `checkout`'s grader."""
    return timed_in(checkout, TIMER, str(seeds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the checkout to compare against")
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    before_all: list[float] = []
    after_all: list[float] = []
    for r in range(args.rounds):
        before = _run(args.before.resolve(), args.seeds)
        after = _run(HERE, args.seeds)
        before_all += before
        after_all += after
        print(
            f"round {r + 1}: before {statistics.median(before) * 1e3:.1f} ms, "
            f"after {statistics.median(after) * 1e3:.1f} ms per seed (medians)"
        )
    b, a = statistics.median(before_all), statistics.median(after_all)
    print(f"all: before {b * 1e3:.1f} ms, after {a * 1e3:.1f} ms, {b / a:.2f}x faster")


if __name__ == "__main__":
    main()
