"""`seqgrade demo` as a new user runs it right after installing."""

from __future__ import annotations

import subprocess
import sys

from grader.app.demo import demo_assignments


def test_demo_grades_the_three_samples_side_by_side():
    assert {"a1_word_vectors", "a4_transformer"} <= set(demo_assignments())
    out = subprocess.run(
        [sys.executable, "-m", "grader", "demo", "-a", "a4"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "solution  buggy" in text.replace("  ", "  ") and "hostile" in text
    assert "solution: 100/100" in text
    buggy = next(line for line in text.splitlines() if line.startswith("buggy:"))
    assert "mistakes named:" in buggy and "100/100" not in buggy
    hostile = next(line for line in text.splitlines() if line.startswith("hostile:"))
    assert "stopped after 3 s" in hostile
