"""Speed and footprint of seqgrade, measured side by side and reported as ratios.

Run by hand (not by CI), after the README's install command, from outside the checkout (a
`seqgrade` started in the checkout's own folder drops that folder from its import path):

    python benchmarks/bench.py            # all measurements, a few minutes
    python benchmarks/bench.py --quick    # fewer repetitions
    python benchmarks/bench.py --quick --course --copies 8 --baseline ../main
                                          # the course table, beside another checkout's grader

The machines here are shared and noisy: read the ratios, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Measured as installed: every process here may write and then reuse bytecode caches (a machine
# that sets PYTHONDONTWRITEBYTECODE, as this one does, would charge each run the compiling of
# every module it imports; `median_of`'s first, untimed run writes them).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from grader.course import registry  # noqa: E402
from grader.course.content import samples_dir, solution_dir  # noqa: E402


def wall(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - t


def median_of(n: int, cmd: list[str], **kw) -> float:
    wall(cmd, **kw)  # warm the page cache
    return statistics.median(wall(cmd, **kw) for _ in range(n))


def seqgrade(*args: str) -> list[str]:
    return [sys.executable, "-m", "grader", *args]


def floor_cmd(aid: str) -> tuple[list[str], str]:
    """A fresh interpreter importing numpy, torch where the solution imports it, and the module."""
    assignment = registry.load(aid)
    src = (solution_dir(aid) / assignment.code_file).read_text()
    uses_torch = assignment.preload_torch or "import torch" in src or "from torch" in src
    mods = ["numpy"] + (["torch"] if uses_torch else []) + [assignment.code_file[:-3]]
    return [sys.executable, "-c", "import " + ", ".join(mods)], "+torch" if uses_torch else "numpy"


def bench_grade(n: int) -> list[tuple[str, float, float, str]]:
    rows = []
    for aid in registry.available():
        if not solution_dir(aid).is_dir():
            continue
        cmd, kind = floor_cmd(aid)
        floor = median_of(n, cmd, cwd=solution_dir(aid))
        grade = median_of(n, seqgrade("grade", str(solution_dir(aid)), "-a", aid))
        rows.append((aid, grade, floor, kind))
    return rows


PEER_TEMPLATE = """
import unittest
import numpy as np
from gradescope_utils.autograder_utils.decorators import weight, number
from gradescope_utils.autograder_utils.json_test_runner import JSONTestRunner
import {module} as student
import grader.course.registry as registry
from grader.engine.trusted import run_trusted
from grader.engine.checks import compare

A = registry.load("{aid}")

def make(q, case):
    @weight(q.points / len(q.cases(0)))
    def test(self):
        got = getattr(student, q.function)(*case.args, **dict(case.kwargs))
        want = run_trusted(q.reference, case)
        self.assertFalse(compare(got, want, q.tolerance, exact=q.integer, names=q.output_names))
    return test

class Peer(unittest.TestCase):
    pass

for q in A.questions:
    if q.kind == "code" and q.custom is None:
        for i, case in enumerate(q.cases(0)):
            setattr(Peer, f"test_{{q.function}}_{{i}}", make(q, case))

if __name__ == "__main__":
    import io
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Peer)
    JSONTestRunner(visibility="visible", stream=io.StringIO()).run(suite)
"""


def bench_peer(n: int, aid: str) -> tuple[float, float] | None:
    """The same checks the gradescope-utils way: unittest + JSONTestRunner, in-process, no sandbox."""
    if aid not in registry.available() or not solution_dir(aid).is_dir():
        return None
    assignment = registry.load(aid)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copy(solution_dir(aid) / assignment.code_file, tmp / assignment.code_file)
        (tmp / "peer.py").write_text(
            PEER_TEMPLATE.format(module=assignment.code_file[:-3], aid=aid)
        )
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        peer = median_of(n, [sys.executable, "peer.py"], cwd=tmp, env=env)
        only_code = tmp / "sub"
        only_code.mkdir()
        shutil.copy(solution_dir(aid) / assignment.code_file, only_code / assignment.code_file)
        ours = median_of(n, seqgrade("grade", str(only_code), "-a", aid))
    return ours, peer


def timed(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall_s = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall_s, cpu


def paired(n: int, a: tuple[list[str], dict], b: tuple[list[str], dict]) -> dict[str, float]:
    """Two commands run in turn, `n` times each (a shared machine drifts: the ratio of neighbours
    is what holds); medians of wall and CPU seconds, and the medians of the per-round ratios."""
    for cmd, kw in (a, b):
        timed(cmd, **kw)  # bytecode and page caches
    rows = []
    for r in range(n):
        order = (a, b) if r % 2 == 0 else (b, a)
        got = {id(cmd): timed(cmd[0], **cmd[1]) for cmd in order}
        rows.append((got[id(a)], got[id(b)]))
    med = statistics.median
    return {
        "a_wall_s": med(x[0][0] for x in rows),
        "b_wall_s": med(x[1][0] for x in rows),
        "a_cpu_s": med(x[0][1] for x in rows),
        "b_cpu_s": med(x[1][1] for x in rows),
        "wall_ratio": med(x[0][0] / x[1][0] for x in rows),
        "cpu_ratio": med(x[0][1] / x[1][1] for x in rows),
    }


def baseline_env(baseline: Path | None) -> dict[str, str] | None:
    """The environment that runs another checkout's grader (`--baseline`: its folder first on
    the import path, so `python -m grader` is that checkout's, `reference` too)."""
    if baseline is None:
        return None
    return {**os.environ, "PYTHONPATH": str(baseline.resolve())}


def bench_course(
    n: int, copies: int, students: int = 2000, baseline: Path | None = None
) -> dict[str, Any]:
    """Per assignment, side by side: one `seqgrade grade` of its solution's code against the same
    checks as an in-process gradescope-utils suite (run in turn), and the warm batch's seconds per
    submission per core (`--jobs 1`, the marginal `copies` of a 2x batch) beside the median of
    that batch's grades (each results.json's execution_time: steadier, without the batch's own
    work); then the projected time of a whole course's regrade, `students` x these assignments
    on this machine's cores, at either rate.
    `baseline` (another checkout, e.g. main's worktree): its grade run in turn with this one's,
    and its batch beside this one's, so that a loaded machine still gives the ratio."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for aid in registry.available():
            assignment = registry.load(aid)
            if not solution_dir(aid).is_dir() or not assignment.code_file:
                continue
            work = Path(tmp) / aid
            work.mkdir()
            shutil.copy(solution_dir(aid) / assignment.code_file, work / assignment.code_file)
            (work / "peer.py").write_text(
                PEER_TEMPLATE.format(module=assignment.code_file[:-3], aid=aid)
            )
            sub = work / "sub"
            sub.mkdir()
            shutil.copy(solution_dir(aid) / assignment.code_file, sub / assignment.code_file)
            peer_env = {**os.environ, "PYTHONPATH": str(REPO)}
            row = paired(
                n,
                (seqgrade("grade", str(sub), "-a", aid), {}),
                ([sys.executable, "peer.py"], {"cwd": work, "env": peer_env}),
            )
            small, large = copies_of(aid, copies, work), copies_of(aid, 2 * copies, work)
            base = baseline_env(baseline)
            if base is not None:
                vs = paired(
                    n,
                    (seqgrade("grade", str(sub), "-a", aid), {}),
                    (seqgrade("grade", str(sub), "-a", aid), {"env": base}),
                )
                row["base_wall_s"], row["vs_base_wall"] = vs["b_wall_s"], vs["wall_ratio"]
                b_small = batch_seconds(small, aid, env=base)
                b_large = batch_seconds(large, aid, env=base)
                row["base_batch_s_per_submission"] = (b_large - b_small) / copies
                row["base_batch_grade_s"] = median_grade(large)
            t_small, t_large = batch_seconds(small, aid), batch_seconds(large, aid)
            row["batch_s_per_submission"] = (t_large - t_small) / copies
            row["batch_grade_s"] = median_grade(large)
            buggy = samples_dir() / aid / "buggy"
            if buggy.is_dir():  # a class is not all solutions: wrong cases cost more words
                small, large = (copies_of(aid, k, work, buggy) for k in (copies, 2 * copies))
                b_small, b_large = batch_seconds(small, aid), batch_seconds(large, aid)
                row["buggy_batch_s_per_submission"] = (b_large - b_small) / copies
                if base is not None:
                    b_small = batch_seconds(small, aid, env=base)
                    b_large = batch_seconds(large, aid, env=base)
                    row["base_buggy_batch_s_per_submission"] = (b_large - b_small) / copies
            row["torch"] = float(assignment.preload_torch)
            rows[aid] = row
    per_student = sum(r["batch_s_per_submission"] for r in rows.values())  # one of each
    out = {
        "rows": rows,
        "cores": cores,
        "students": students,
        "assignments": len(rows),
        "projected_min": students * per_student / cores / 60,
        "projected_by_grade_min": students
        * sum(r["batch_grade_s"] for r in rows.values())
        / cores
        / 60,
    }
    if baseline is not None:
        base_each = sum(r["base_batch_s_per_submission"] for r in rows.values())
        out["base_projected_min"] = students * base_each / cores / 60
        base_grades = sum(r["base_batch_grade_s"] for r in rows.values())
        out["base_projected_by_grade_min"] = students * base_grades / cores / 60
    return out


def bench_startup(n: int) -> dict[str, float]:
    return {
        "seqgrade --help": median_of(n, seqgrade("--help")),
        "seqgrade list": median_of(n, seqgrade("list")),
        "python -c pass": median_of(n, [sys.executable, "-c", "pass"]),
    }


EXPR_PAIRS = [
    ("1 - tanh(z)^2", "1/cosh(z)^2", "z"),
    ("sigmoid(x)(1-sigmoid(x))", "exp(-x)/(1+exp(-x))^2", "x"),
    ("d(12d+13)", "12 d^2 + 13 d", "d"),
    (
        "-u_a + p_a u_a + p_b u_b + p_c u_c",
        "p_a u_a + p_b u_b + p_c u_c - u_a",
        "u_a,u_b,u_c,p_a,p_b,p_c",
    ),
    ("$\\frac{1}{\\sqrt{d_k}}$", "1/sqrt(d_k)", "d_k"),
    ("1 - h^2", "1 - h**2", "h"),
    ("12 N d^2", "12*N*d**2", "N,d"),
    ("2 d d_ff + d_ff + d", "d_ff(2d + 1) + d", "d,d_ff"),
    ("9^9^9^9", "1", "x"),
    ("(" * 5000 + "x" + ")" * 5000, "x", "x"),
    ("__import__('os')", "x", "x"),
    ("x" * 100_000, "x", "x"),
]


def bench_expr() -> tuple[float, float, int]:
    from grader.written.expr.checker import ExprChecker

    times = []
    with ExprChecker() as checker:
        checker.check("x", "x", ["x"])  # start-up is paid once per submission, not per answer
        for answer, expected, symbols in EXPR_PAIRS:
            t = time.perf_counter()
            checker.check(answer, expected, symbols.split(","))
            times.append(time.perf_counter() - t)
    return statistics.median(times), max(times), len(times)


def bench_batch(copies: int) -> dict[int, float]:
    aid = next((a for a in registry.available() if solution_dir(a).is_dir()), None)
    if aid is None:
        return {}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "class"
        for i in range(copies):
            shutil.copytree(solution_dir(aid), root / f"s{i:03d}")
        for jobs in (1, 2):
            t = time.perf_counter()
            subprocess.run(
                seqgrade(
                    "batch",
                    str(root),
                    "-a",
                    aid,
                    "--jobs",
                    str(jobs),
                    "--force",
                    "--out",
                    str(Path(tmp) / f"g{jobs}.csv"),
                ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            out[jobs] = copies / (time.perf_counter() - t)
    return out


def batch_seconds(
    root: Path,
    aid: str,
    *,
    jobs: int = 1,
    warm: bool = True,
    cluster: str | None = None,
    env: dict[str, str] | None = None,
) -> float:
    """Wall time of one whole `seqgrade batch --force` run (CLI start-up included)."""
    how = ["--cluster", cluster] if cluster else ["--jobs", str(jobs)]
    env = {**(env or os.environ), "SEQGRADE_WARM": "1" if warm else "0"}
    t = time.perf_counter()
    subprocess.run(
        seqgrade(
            "batch",
            str(root),
            "-a",
            aid,
            *how,
            "--force",
            "--quiet",
            "--out",
            str(root.parent / f"{root.name}.csv"),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=True,
    )
    return time.perf_counter() - t


def median_grade(root: Path) -> float:
    """The median `execution_time` of the results a `batch_seconds(root, ...)` run wrote: each
    submission's grade alone, without the batch's own work (steadier than a marginal)."""
    times = [
        json.loads(f.read_text())["execution_time"]
        for f in (root.parent / f"{root.name}_results").glob("*.json")
    ]
    return statistics.median(times) if times else float("nan")


def copies_of(aid: str, copies: int, where: Path, source: Path | None = None) -> Path:
    """`copies` submissions of `source` (the solution by default) in one batch folder."""
    source = solution_dir(aid) if source is None else source
    root = where / f"{aid}-{source.name}-{copies}"
    for i in range(copies):
        shutil.copytree(source, root / f"s{i:03d}")
    return root


def bench_warm(copies: int) -> dict[str, dict[str, float]]:
    """Batch seconds per submission per core (--jobs 1), warm templates vs a fresh worker each:
    overall (start-up included, over `copies`) and marginal (the extra `copies` of a 2x batch)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for aid in ("a6_pretraining_scale", "a1_word_vectors", "a5_shapes_debugging"):
            if aid not in registry.available() or not solution_dir(aid).is_dir():
                continue
            n = min(copies, 12) if aid == "a5_shapes_debugging" else copies  # a5 cold: 1.8 s each
            small, large = copies_of(aid, n, Path(tmp)), copies_of(aid, 2 * n, Path(tmp))
            row = {}
            for label, warm in (("cold", False), ("warm", True)):
                t_small = batch_seconds(small, aid, warm=warm)
                t_large = batch_seconds(large, aid, warm=warm)
                row[f"{label}_overall_s"] = t_large / (2 * n)
                row[f"{label}_marginal_s"] = (t_large - t_small) / n
            out[aid] = row
    return out


def bench_cluster(
    copies: int, aid: str = "a6_pretraining_scale", rounds: int = 3
) -> dict[str, Any]:
    """Submissions per second, `--cluster local:2` vs `--jobs 2` (both warm), whole CLI runs:
    overall (over 2x`copies`, start-up included) and marginal (the extra `copies`). The two are
    run in turn, `rounds` times, the order swapped each round (a shared machine drifts); the
    figures are each round's ratio and their median."""
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small, large = copies_of(aid, copies, Path(tmp)), copies_of(aid, 2 * copies, Path(tmp))
        kinds = [("jobs2", {"jobs": 2}), ("local2", {"cluster": "local:2"})]
        for r in range(rounds):
            for label, how in kinds if r % 2 == 0 else kinds[::-1]:
                t_small = batch_seconds(small, aid, **how)
                t_large = batch_seconds(large, aid, **how)
                rows.setdefault(f"{label}_overall_per_s", []).append(2 * copies / t_large)
                rows.setdefault(f"{label}_marginal_per_s", []).append(
                    copies / max(t_large - t_small, 1e-9)
                )
    out: dict[str, Any] = {k: statistics.median(v) for k, v in rows.items()}
    out["rounds"] = rows
    for kind in ("overall", "marginal"):
        pool, dask = rows[f"jobs2_{kind}_per_s"], rows[f"local2_{kind}_per_s"]
        out[f"{kind}_ratios"] = [d / p for d, p in zip(dask, pool, strict=True)]
        out[f"{kind}_ratio"] = statistics.median(out[f"{kind}_ratios"])
    return out


def footprint() -> dict[str, float]:
    sizes = {}
    for dist in ("torch", "numpy", "sympy", "mpmath", "gradescope-utils", "PyYAML"):
        try:
            files = importlib.metadata.files(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        total = 0
        for f in files:
            p = f.locate()
            if p.is_file():
                total += p.stat().st_size
        sizes[dist] = total / 1e6
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--course", action="store_true", help="only the course table (section 0), then stop"
    )
    ap.add_argument("--copies", type=int, help="the course table's batch: marginal copies")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. main's worktree): the course table also runs its grade and "
        "batch side by side with this one's (their ratio holds on a loaded machine)",
    )
    args = ap.parse_args()
    n = 3 if args.quick else 5
    figures: dict = {}

    course = bench_course(n, args.copies or (6 if args.quick else 24), baseline=args.baseline)
    print(
        "0. the course: one grade vs the in-process gradescope-utils peer (run in turn; medians "
        "of the per-round ratios), and the warm batch (--jobs 1, s per submission per core; "
        "'grade in it': the median of its grades' own execution_time)"
    )
    print(
        f"   {'assignment':<26} {'grade s':>8} {'peer s':>7} {'wall x':>7} {'cpu x':>6} "
        f"{'batch s/sub':>11} {'grade in it':>11} {'buggy s/sub':>11}"
    )
    for aid, r in course["rows"].items():
        vs = (
            f"  | baseline grade {r['base_wall_s']:.2f} s, this/baseline {r['vs_base_wall']:.2f}x, "
            f"baseline batch {r['base_batch_s_per_submission']:.3f} "
            f"(grade in it {r['base_batch_grade_s']:.3f})"
            + (
                f", buggy {r['base_buggy_batch_s_per_submission']:.3f}"
                if "base_buggy_batch_s_per_submission" in r
                else ""
            )
            if "vs_base_wall" in r
            else ""
        )
        buggy = r.get("buggy_batch_s_per_submission")
        print(
            f"   {aid:<26} {r['a_wall_s']:8.2f} {r['b_wall_s']:7.2f} {r['wall_ratio']:7.2f} "
            f"{r['cpu_ratio']:6.2f} {r['batch_s_per_submission']:11.3f} "
            f"{r['batch_grade_s']:11.3f} "
            + (f"{buggy:11.3f}" if buggy is not None else f"{'-':>11}")
            + ("  (torch)" if r["torch"] else "")
            + vs
        )
    print(
        f"   projected full regrade: {course['students']} students x {course['assignments']} "
        f"assignments on {course['cores']} cores at these batch rates: "
        f"{course['projected_min']:.1f} min"
        + (
            f" (baseline {course['base_projected_min']:.1f} min)"
            if "base_projected_min" in course
            else ""
        )
        + f"; at the median grade in the batch: {course['projected_by_grade_min']:.1f} min"
        + (
            f" (baseline {course['base_projected_by_grade_min']:.1f} min)"
            if "base_projected_by_grade_min" in course
            else ""
        )
    )
    figures["course"] = course
    if args.course:
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
        return

    print(
        "1. grading one solution vs the floor (fresh python importing numpy[, torch] and the module)"
    )
    print(f"   {'assignment':<22} {'grade s':>8} {'floor s':>8} {'ratio':>6}  floor imports")
    for aid, g, f, kind in bench_grade(n):
        print(f"   {aid:<22} {g:8.2f} {f:8.2f} {g / f:6.2f}  {kind}")
        figures.setdefault("grade", {})[aid] = {"grade_s": g, "floor_s": f, "ratio": g / f}

    peer = bench_peer(n, "a1_word_vectors")
    if peer:
        ours, theirs = peer
        print(
            f"2. a1 code questions: seqgrade {ours:.2f} s vs gradescope-utils in-process {theirs:.2f} s "
            f"-> ratio {ours / theirs:.2f}"
        )
        figures["peer"] = {"seqgrade_s": ours, "peer_s": theirs, "ratio": ours / theirs}

    start = bench_startup(n)
    print("3. start-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in start.items()))
    figures["startup"] = start

    med, worst, count = bench_expr()
    print(
        f"4. expression checks over {count} pairs (incl. hostile ones): median {med * 1000:.0f} ms, "
        f"worst {worst * 1000:.0f} ms"
    )
    figures["expr"] = {"median_ms": med * 1000, "worst_ms": worst * 1000}

    rates = bench_batch(6 if args.quick else 12)
    if rates:
        print(
            f"5. batch: {rates[1]:.2f} submissions/s with 1 job, {rates[2]:.2f} with 2 jobs "
            f"-> speed-up {rates[2] / rates[1]:.2f}x"
        )
        figures["batch"] = {
            "jobs1_per_s": rates[1],
            "jobs2_per_s": rates[2],
            "speedup": rates[2] / rates[1],
        }

    warm = bench_warm(6 if args.quick else 48)  # batches of 96: a class, not a handful
    print(
        "7. batch, s per submission per core (--jobs 1): cold -> warm, overall (start-up included) "
        "and marginal"
    )
    for aid, row in warm.items():
        print(
            f"   {aid:<22} overall {row['cold_overall_s']:.3f} -> {row['warm_overall_s']:.3f}, "
            f"marginal {row['cold_marginal_s']:.3f} -> {row['warm_marginal_s']:.3f}"
        )
    figures["warm"] = warm

    try:
        import distributed  # noqa: F401
    except ImportError:
        print("8. --cluster local:2: skipped (pip install 'seqgrade[cluster]')")
    else:
        rates = bench_cluster(12 if args.quick else 150, rounds=1 if args.quick else 3)
        for kind in ("overall", "marginal"):
            pool, dask = rates[f"jobs2_{kind}_per_s"], rates[f"local2_{kind}_per_s"]
            each = ", ".join(f"{r:.2f}" for r in rates[f"{kind}_ratios"])
            print(
                f"8. batch a6 ({kind}): --jobs 2 {pool:.2f} /s, --cluster local:2 {dask:.2f} /s "
                f"(medians) -> {rates[f'{kind}_ratio']:.2f}x (rounds: {each})"
            )
        figures["cluster"] = rates

    sizes = footprint()
    print(
        "6. installed footprint (MB): "
        + ", ".join(f"{k} {v:.0f}" for k, v in sizes.items())
        + f"; total {sum(sizes.values()):.0f}"
    )
    figures["footprint_mb"] = sizes
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
