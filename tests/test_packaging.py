"""A plain (non-editable) install works from any directory: content travels in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_carries_content_and_grades_from_another_directory(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("seqgrade-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "grader/_content/assignments/a1_word_vectors/word_vectors.py" in names
    assert "grader/_content/solutions/a4_transformer/transformer.py" in names
    assert "grader/samples/a4_transformer/buggy/transformer.py" in names
    assert not any(n.startswith("tests/") for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    where = subprocess.run([str(py), "-c", "import grader; print(grader.__file__)"], capture_output=True, text=True,
                           cwd=tmp_path, check=True)
    assert str(venv) in where.stdout
    out = subprocess.run([str(venv / "bin" / "seqgrade"), "grade",
                          str(venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" /
                              "site-packages" / "grader" / "_content" / "solutions" / "a2_rnn_bptt"), "-a", "a2"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "total 100 / 100" in out.stdout
