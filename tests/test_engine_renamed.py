"""grader/engine/renamed.py: a file submitted under another name than the one asked for is
graded under that name when it alone stands in for it, with a note; never guessed between two.

The names are the ones students' tools write: Colab's "Copy of …" for a copied notebook, a
browser's " (1)" for a second download, and the names students give their own files.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from conftest import FAST

from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.engine.locate import locate
from grader.engine.renamed import stand_ins

CODE = "transformer.py"


@pytest.mark.parametrize(
    ("paths", "want"),
    [
        (["Copy of transformer.ipynb"], {"Copy of transformer.ipynb": "transformer.ipynb"}),
        (["transformer (1).py"], {"transformer (1).py": CODE}),
        (["A4_Transformer_final.ipynb"], {"A4_Transformer_final.ipynb": "transformer.ipynb"}),
        (["sub/Copy of Transformer.py"], {"sub/Copy of Transformer.py": f"sub/{CODE}"}),
        (["mine.py", "test_public.py", "variant.py"], {"mine.py": CODE}),  # the only own .py
        (["A4.ipynb", "check.py"], {"A4.ipynb": "transformer.ipynb"}),  # the only notebook
        (["answers (2).toml", CODE], {"answers (2).toml": "answers.toml"}),
        (["my answers.toml.txt", CODE], {"my answers.toml.txt": "answers.toml"}),
        (["transformer.py.txt"], {"transformer.py.txt": CODE}),
        # the named one wins over another of the same kind
        (["transformer (1).py", "helpers.py"], {"transformer (1).py": CODE}),
        (
            ["Copy of transformer.ipynb", "utils.py"],
            {"Copy of transformer.ipynb": "transformer.ipynb"},
        ),
    ],
)
def test_the_one_file_that_stands_in_is_found(paths: list[str], want: dict[str, str]) -> None:
    assert stand_ins(paths, CODE, "answers.toml") == want


@pytest.mark.parametrize(
    "paths",
    [
        [CODE, "transformer (1).py"],  # the asked-for file is there
        ["transformer.ipynb", "Copy of transformer.ipynb"],  # its notebook is there
        ["transformer (1).py", "transformer (2).py"],  # two of equal rank
        ["mine.py", "other.py"],  # neither named for it
        ["mine.py", "A4.ipynb"],  # one of each kind, neither named for it
        ["test_transformer.py"],  # a test file
        ["test_public.py", "variant.py", "check.py"],  # the handout's own files
    ],
)
def test_no_stand_in_is_guessed(paths: list[str]) -> None:
    assert {
        p: n for p, n in stand_ins(paths, CODE, "answers.toml").items() if n != "answers.toml"
    } == {}


def _solution_zip(names: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for arcname, source in names.items():
            zf.writestr(arcname, (solution_dir("a1_word_vectors") / source).read_text())
    return buf.getvalue()


def test_a_renamed_zip_member_is_read_under_the_asked_for_name(tmp_path: Path) -> None:
    path = tmp_path / "sub.zip"
    path.write_bytes(
        _solution_zip(
            {"hw1/word_vectors (1).py": "word_vectors.py", "hw1/answers.toml": "answers.toml"}
        )
    )
    located = locate(path, ("word_vectors.py", "answers.toml"))
    assert set(located.files) >= {"word_vectors.py", "answers.toml"}
    assert any(
        "`hw1/word_vectors (1).py` was graded as `word_vectors.py`" in n for n in located.notes
    )


def test_a_copied_colab_notebook_and_a_renamed_answers_file_get_full_marks(tmp_path: Path) -> None:
    import nbformat

    a1 = registry.load("a1_word_vectors")
    code = (solution_dir(a1.id) / "word_vectors.py").read_text()
    folder = tmp_path / "colab"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    (folder / "Copy of word_vectors.ipynb").write_text(nbformat.writes(nb))
    (folder / "answers (1).toml").write_text((solution_dir(a1.id) / "answers.toml").read_text())
    report = grade_submission(folder, a1, limits=FAST)
    assert report.score == report.max_score == 100
    notes = " ".join(report.warnings)
    assert "`Copy of word_vectors.ipynb` was graded as `word_vectors.ipynb`" in notes
    assert "`answers (1).toml` was graded as `answers.toml`" in notes
