"""The mutation targets (issue 17) on an evenly spread sample of every solution's mutants.

`benchmarks/mutation_testing.py` mutates every function of every solution one point at a time,
grades the mutants, diff-tests the survivors and checks each named mistake against the mutated
function (the README's figures are its full runs). Here one run of it on a fixed sample of each
assignment's mutants (the same sample every time) holds the targets: a mutation score of at
least 0.99 per assignment, and wrong namings within what a 3% share allows on the sample.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

from grader.course import registry

ASSIGNMENTS = registry.available()  # the one list of assignments
SAMPLE = 80  # mutants per assignment (of 122 to 677): under a minute on two cores


def _figures(output: str, aid: str) -> dict[str, float]:
    block = output.split(f"== {aid}:", 1)[1].split("\n==", 1)[0]
    return {
        "score": float(re.search(r"mutation score ([0-9.]+)", block).group(1)),
        "killed": int(re.search(r"killed (\d+),", block).group(1)),
        "named": int(re.search(r"named killed (\d+)", block).group(1)),
        "wrong": int(re.search(r"wrong namings (\d+)", block).group(1)),
    }


@pytest.fixture(scope="module")
def mutation_run() -> str:
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "mutation_testing.py"),
            *ASSIGNMENTS,
            "--limit",
            str(SAMPLE),
            "-j",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_mutation_score_at_least_0_99(mutation_run: str, aid: str):
    f = _figures(mutation_run, aid)
    assert f["killed"] >= SAMPLE // 2, mutation_run  # the sample really was graded
    assert f["score"] >= 0.99, mutation_run


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_at_most_3_percent_of_the_named_mistakes_are_wrong(mutation_run: str, aid: str):
    """A sample names 2 to 12 mistakes per assignment, too few to measure a 3% share (the full
    runs' figures in the README do): here one wrong naming per assignment is the most allowed."""
    f = _figures(mutation_run, aid)
    assert f["named"] >= 2, mutation_run  # the diagnosis ran
    assert f["wrong"] <= max(1, int(0.03 * f["named"])), mutation_run


def _benchmark_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "mutation_testing", ROOT / "benchmarks" / "mutation_testing.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


TINY = """
def scale(x, k=2):
    return x * k


def shift(x):
    if x > 0:
        return x - 1
    return x
"""


def test_cosmic_ray_mutants_come_from_its_own_operators_one_function_each(tmp_path):
    bench = _benchmark_module()
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    mutants = bench.generate_cosmic_ray(path)
    families = {m.operator for m in mutants}
    assert {"ReplaceBinaryOperator", "ReplaceComparisonOperator", "NumberReplacer"} <= families
    assert {m.function for m in mutants} == {"scale", "shift"}
    for m in mutants:
        ns: dict = {}
        exec(compile(m.source, "<m>", "exec"), ns)  # noqa: S102 - our own tiny file, mutated
        other = "shift" if m.function == "scale" else "scale"
        assert ns[other](3) == {"scale": 6, "shift": 2}[other]  # the other function untouched
    assert len({m.source for m in mutants}) == len(mutants)


def test_multi_mistake_files_hold_mutants_of_different_functions(tmp_path):
    bench = _benchmark_module()
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    files = bench.combine(path, bench.generate(path), 5)
    assert len(files) == 5
    for f in files:
        assert len(f.parts) == 2 and f.functions == {"scale", "shift"}
        ns: dict = {}
        exec(compile(f.source, "<m>", "exec"), ns)  # noqa: S102
        for part in f.parts:  # each function is its mutant's text
            mine: dict = {}
            exec(compile(part.source, "<m>", "exec"), mine)  # noqa: S102
            try:
                want = mine[part.function](3)
            except Exception as err:  # noqa: BLE001 - a mutant may raise
                with pytest.raises(type(err)):
                    ns[part.function](3)
            else:
                assert ns[part.function](3) == want
