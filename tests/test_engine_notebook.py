"""grader/engine/notebook.py on its own, without a worker: what it reads from an .ipynb, the
written answers in a markdown (or code, or raw) cell, the shapes Colab writes, and the message
a notebook that cannot be read gives.

The expected values come from the notebook format (nbformat 4: a cell's source is a string or
a list of strings, code cells carry outputs that are never read) and from docs/notebooks.md
(which cells are answers cells, how code cells are numbered, the messages' promises). Grading a
whole notebook in a worker is tests/test_notebook.py's.
"""

from __future__ import annotations

import json

import pytest

from grader.engine import notebook as nb


def cell(kind: str, source: str | list[str], **extra) -> dict:
    c = {"cell_type": kind, "metadata": extra.pop("metadata", {}), "source": source, **extra}
    if kind == "code":
        c.setdefault("outputs", [])
        c.setdefault("execution_count", None)
    return c


def notebook(*cells: dict, metadata: dict | None = None, **top) -> bytes:
    doc = {
        "cells": list(cells),
        "metadata": metadata
        if metadata is not None
        else {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
        **top,
    }
    return json.dumps(doc).encode()


# ------------------------------------------------------------------ what is read from a notebook


def test_code_cells_are_numbered_from_one_and_other_cells_are_not_counted():
    book = nb.read_notebook(
        notebook(
            cell("markdown", "# Title"),
            cell("code", "import numpy as np\n"),
            cell("raw", "not code"),
            cell("code", ["def f(x):\n", "    return x\n"]),  # the multiline (list) form
        ),
        "rnn.ipynb",
    )
    assert book.name == "rnn.ipynb"
    assert book.code_cells == [(1, "import numpy as np\n"), (2, "def f(x):\n    return x\n")]
    assert book.answers is None
    assert book.notes == []
    assert book.counts == {"code": 2, "markdown": 1, "raw": 1}


def test_outputs_are_never_read():
    huge = {"output_type": "stream", "name": "stdout", "text": ["x" * 100_000]}
    book = nb.read_notebook(
        notebook(cell("code", "y = 1\n", outputs=[huge] * 20, execution_count=3)), "a.ipynb"
    )
    assert book.code_cells == [(1, "y = 1\n")]
    assert not any("x" * 100 in text for _, text in book.code_cells)


def test_a_tagged_cell_is_not_run_and_the_note_names_it():
    book = nb.read_notebook(
        notebook(
            cell("code", "x = 1\n"),
            cell("code", "run_public_tests()\n", metadata={"tags": [nb.SKIP_TAG]}),
        ),
        "a.ipynb",
    )
    assert book.code_cells == [(1, "x = 1\n")]
    assert len(book.notes) == 1 and "code cell 2" in book.notes[0]
    assert nb.SKIP_TAG in book.notes[0] and "not run" in book.notes[0]


def test_another_kernel_is_named_in_a_note():
    book = nb.read_notebook(
        notebook(
            cell("code", "1\n"),
            metadata={"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}},
        ),
        "a.ipynb",
    )
    assert any("`ir`" in note and "R" in note and "Python" in note for note in book.notes)


def test_notebook_name_follows_the_code_file():
    assert nb.notebook_name("transformer.py") == "transformer.ipynb"
    assert nb.notebook_name("word_vectors.py") == "word_vectors.ipynb"


# ------------------------------------------------------------------ written answers in a cell

TOML = 'q1 = "B"\nq2 = 3.5\n'


@pytest.mark.parametrize(
    "answers_cell,form",
    [
        (cell("code", "%%writefile answers.toml\n" + TOML), "writefile"),
        (cell("code", "# answers.toml\n" + TOML), "comment"),
        (cell("raw", "# answers.toml\n" + TOML), "raw"),
        (cell("markdown", "# answers.toml\n```toml\n" + TOML + "```\n"), "markdown"),
        (cell("markdown", "**answers.toml**\n\n~~~toml\n" + TOML + "~~~\n"), "markdown"),
    ],
    ids=["writefile", "comment", "raw", "markdown-heading", "markdown-bold-tilde"],
)
def test_the_answers_cell_in_each_form_is_read_and_not_run(answers_cell, form):
    book = nb.read_notebook(notebook(cell("code", "x = 1\n"), answers_cell), "a.ipynb")
    assert book.code_cells == [(1, "x = 1\n")]  # the answers cell is read, not run
    assert book.answers is not None and book.answers.form == form
    body = [line for line in book.answers.toml.splitlines() if line.strip()]
    assert body == ['q1 = "B"', "q2 = 3.5"]


def test_the_answers_keep_their_line_numbers_in_the_cell():
    """Feedback says "line 3" of the cell: the mark and the fence are blanked, not removed."""
    book = nb.read_notebook(
        notebook(cell("markdown", "# answers.toml\n```toml\n" + TOML + "```\n")), "a.ipynb"
    )
    lines = book.answers.toml.split("\n")
    assert lines[0] == "" and lines[1] == ""  # the mark, the opening fence
    assert lines[2] == 'q1 = "B"' and lines[3] == "q2 = 3.5"  # the cell's lines 3 and 4


def test_a_markdown_cell_picks_its_toml_block_over_another_fence():
    book = nb.read_notebook(
        notebook(cell("markdown", "# answers.toml\n```\nnot this\n```\n```toml\n" + TOML + "```")),
        "a.ipynb",
    )
    assert [ln for ln in book.answers.toml.splitlines() if ln.strip()] == ['q1 = "B"', "q2 = 3.5"]


def test_only_the_first_answers_cell_counts_and_a_code_answers_cell_says_it_was_not_run():
    book = nb.read_notebook(
        notebook(
            cell("code", "# answers.toml\nq1 = 'A'\n"),
            cell("code", "# answers.toml\nq1 = 'B'\n"),
        ),
        "a.ipynb",
    )
    assert "q1 = 'A'" in book.answers.toml
    assert book.code_cells == [(2, "# answers.toml\nq1 = 'B'\n")]  # the second one is code
    assert any("code cell 1" in n and "not run" in n for n in book.notes)


def test_a_cell_that_names_the_file_below_its_first_line_is_a_near_miss_named_when_not_found():
    book = nb.read_notebook(
        notebook(cell("code", "x = 1\n"), cell("code", "# my answers\n# answers.toml\nq1 = 'A'\n")),
        "a.ipynb",
    )
    assert book.answers is None
    message = nb.answers_not_found(book)
    assert "`answers.toml` was not found" in message and "`a.ipynb`" in message
    assert "2 code, 0 markdown and 0 raw cells" in message
    assert "code cell 2" in message and "neither starts with an answers mark" in message


# ------------------------------------------------------------------ Colab's notebooks


def colab_notebook(*cells: dict) -> bytes:
    """As Colab saves one: a `colab` block and `accelerator` in the metadata, an `id` and a
    `colab`/`outputId` block in each cell's metadata, sources as lists of lines."""
    return notebook(
        *cells,
        metadata={
            "colab": {"provenance": [], "name": "a3.ipynb"},
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "language_info": {"name": "python"},
            "accelerator": "GPU",
        },
        nbformat_minor=0,
    )


def test_a_colab_notebook_is_read_with_its_answers_as_a_comment_cell():
    book = nb.read_notebook(
        colab_notebook(
            cell(
                "code",
                ["from google.colab import drive\n", "x = 1"],
                metadata={
                    "id": "Xy12",
                    "colab": {"base_uri": "https://localhost:8080/"},
                    "outputId": "e0f3",
                },
            ),
            cell("code", ["# answers.toml\n", 'q1 = "B"'], metadata={"id": "Ab34"}),
        ),
        "a3.ipynb",
    )
    assert book.code_cells == [(1, "from google.colab import drive\nx = 1")]
    assert book.answers is not None and book.answers.form == "comment"
    assert 'q1 = "B"' in book.answers.toml
    # no kernel note: Colab's kernelspec has no `language`, its language_info says python
    assert not any("kernel" in n for n in book.notes)


def test_a_byte_order_mark_and_windows_line_ends_are_read():
    data = b"\xef\xbb\xbf" + notebook(cell("raw", "# answers.toml\r\nq1 = 'A'\r\n"))
    book = nb.read_notebook(data, "a.ipynb")
    assert book.answers is not None and book.answers.form == "raw"
    assert "q1 = 'A'" in book.answers.toml.split("\n")


# ------------------------------------------------------------------ a notebook that cannot be read


@pytest.mark.parametrize(
    "data,words",
    [
        (b'{"cells": [', "its JSON is malformed at line 1, column"),
        (b"\xff\xfe\x00{", "it is not UTF-8 text"),
        (b"[1, 2, 3]", "it has no list of cells"),
        (b'{"cells": "print(1)"}', "it has no list of cells"),
        (b"[" * 100_000 + b"]" * 100_000, "not a notebook"),
    ],
    ids=["truncated-json", "not-utf8", "a-list", "cells-not-a-list", "nested-too-deeply"],
)
def test_a_bad_notebook_raises_a_clear_message_naming_the_file(data, words):
    with pytest.raises(nb.NotebookError) as caught:
        nb.read_notebook(data, "rnn.ipynb")
    message = str(caught.value)
    assert message.startswith("`rnn.ipynb` is not a notebook"), message
    assert words in message, message


def test_malformed_json_tells_the_student_how_to_fix_it():
    with pytest.raises(nb.NotebookError, match="open it in Jupyter or Colab and save it again"):
        nb.read_notebook(b'{"cells": [}', "rnn.ipynb")


def test_too_much_code_is_refused_with_the_sizes():
    big = "x = 1\n" * (nb.MAX_CODE_CHARS // 6 + 1)
    with pytest.raises(nb.NotebookError) as caught:
        nb.read_notebook(notebook(cell("code", big)), "rnn.ipynb")
    assert f"{len(big):,} characters of code" in str(caught.value)
    assert f"{nb.MAX_CODE_CHARS:,}" in str(caught.value)


def test_a_version_3_notebook_is_upgraded_and_read():
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": ""},
        "worksheets": [
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "input": "x = 41 + 1\n",
                        "language": "python",
                        "metadata": {},
                        "outputs": [],
                    },
                    {"cell_type": "markdown", "metadata": {}, "source": "notes"},
                ],
                "metadata": {},
            }
        ],
    }
    book = nb.read_notebook(json.dumps(v3).encode(), "old.ipynb")
    assert book.code_cells == [(1, "x = 41 + 1\n")]
    assert book.counts["markdown"] == 1


def test_a_cell_with_keys_outside_the_format_is_read_with_a_note():
    odd = cell("code", "x = 1\n")
    odd["id"] = "c1"  # nbformat 4.5 wants one; its absence is not what this test is about
    odd["unknown_key"] = True
    book = nb.read_notebook(notebook(odd), "a.ipynb")
    assert book.code_cells == [(1, "x = 1\n")]
    assert book.validation is not None  # the quick check had doubts: nbformat's check runs
    notes = book.validation.result()
    assert len(notes) == 1 and "does not follow the notebook format exactly" in notes[0]
    assert "read anyway" in notes[0]


# ------------------------------------------------------------------ answers in a cell without a mark

KEYS = frozenset({"q1", "q2"})
WRITE = 'answers = """\nq1 = "B"\nq2 = 3.5\n"""\nwith open("answers.toml", "w") as f:\n    f.write(answers)\n'


@pytest.mark.parametrize(
    "answers_cell,form,line_of_q1",
    [
        (cell("markdown", "## Written answers\n\n```toml\n" + TOML + "```\n"), "markdown", 4),
        (
            cell("markdown", "### My answers (answers.toml)\n```toml\n" + TOML + "```"),
            "markdown",
            3,
        ),
        (cell("code", "# Written part\n# answers.toml\n" + TOML), "comment", 3),
        (cell("code", WRITE), "string", 2),
        (cell("code", "# my answers\n" + TOML), "toml", 2),
        (
            cell(
                "code",
                'from pathlib import Path\nPath("answers.toml").write_text(\n"""q1 = "B"\nq2 = 3.5\n""")\n',
            ),
            "string",
            3,
        ),
    ],
    ids=[
        "markdown-fence",
        "markdown-title-naming-the-file",
        "mark-below-a-title",
        "open-write",
        "code-of-toml",
        "write_text",
    ],
)
def test_an_unmarked_cell_that_sets_a_written_key_is_taken_as_the_answers(
    answers_cell, form, line_of_q1
):
    """Where students put their answers without the mark (docs/notebooks.md, "Without the
    mark"): taken when it sets a key of the assignment, with the cell's own line numbers."""
    book = nb.read_notebook(notebook(cell("code", "x = 1\n"), answers_cell), "a.ipynb")
    assert book.answers is None  # the first line is not a mark
    nb.adopt_unmarked(book, KEYS)
    assert book.answers is not None and book.answers.form == form and not book.answers.marked
    lines = book.answers.toml.split("\n")
    assert lines[line_of_q1 - 1] == 'q1 = "B"' and lines[line_of_q1] == "q2 = 3.5"
    assert [ln for ln in lines if ln.strip() and not ln.startswith("#")] == ['q1 = "B"', "q2 = 3.5"]
    assert any("taken as your written answers" in n and "`q1`" in n for n in book.notes)
    ran = [n for n, _ in book.code_cells]
    # a cell of TOML is read, not run; a cell of Python that writes the file still runs
    assert ran == ([1, 2] if form == "string" else [1])


@pytest.mark.parametrize(
    "source",
    [
        "q1 = 'B'\n",  # one value: a variable, not a sheet of answers
        "d = 4\nh = 2\n",  # TOML, but no written key
        "q1 = 'B'\nq2 = f(3)\n",  # Python, not TOML
    ],
)
def test_a_code_cell_is_taken_as_toml_answers_only_when_it_is_toml_with_two_values(source):
    book = nb.read_notebook(notebook(cell("code", "x = 1\n"), cell("code", source)), "a.ipynb")
    nb.adopt_unmarked(book, KEYS | {"d_model"})
    assert book.answers is None
    assert [n for n, _ in book.code_cells] == [1, 2]


@pytest.mark.parametrize(
    "other",
    [
        cell(
            "markdown", '## Syntax\n```toml\nexample = "d/dx (x^3) = 3 x^2"\n```'
        ),  # no key of ours
        cell("code", 'text = """\nq1 = "B"\n"""\nprint(text)  # answers.toml\n'),  # not written
        cell("code", '"""Notes on answers.toml:\nq1 = "B"\n"""\n'),  # a docstring, not written
        cell("raw", "q1 = 'B'\n"),  # no mention of answers.toml
    ],
    ids=["example-of-other-keys", "printed-string", "docstring", "raw-without-the-name"],
)
def test_a_cell_that_sets_no_key_or_writes_no_file_is_not_taken(other):
    book = nb.read_notebook(notebook(cell("code", "x = 1\n"), other), "a.ipynb")
    nb.adopt_unmarked(book, KEYS)
    assert book.answers is None
    assert "`answers.toml` was not found" in nb.answers_not_found(book)


def test_a_marked_cell_wins_over_an_earlier_unmarked_one_and_nothing_is_taken_without_keys():
    unmarked = cell("markdown", "## Written answers\n```toml\nq1 = 'A'\n```")
    marked = cell("code", "# answers.toml\nq1 = 'B'\n")
    book = nb.read_notebook(notebook(unmarked, marked), "a.ipynb")
    nb.adopt_unmarked(book, KEYS)
    assert book.answers.marked and "q1 = 'B'" in book.answers.toml
    alone = nb.read_notebook(notebook(unmarked), "a.ipynb")
    nb.adopt_unmarked(alone, frozenset())
    assert alone.answers is None


def test_the_first_unmarked_cell_that_sets_a_key_is_taken():
    book = nb.read_notebook(
        notebook(
            cell("markdown", "## Syntax\n```toml\nexample = 1\n```"),
            cell("markdown", "## Mine\n```toml\nq2 = 1.0\n```"),
            cell("markdown", "## Draft\n```toml\nq1 = 'C'\n```"),
        ),
        "a.ipynb",
    )
    nb.adopt_unmarked(book, KEYS)
    assert "q2 = 1.0" in book.answers.toml and "starts `## Mine`" in book.answers.where


def test_the_file_beside_the_notebook_wins_over_an_unmarked_cell():
    from grader.engine.locate import Located

    data = notebook(cell("code", "x = 1\n"), cell("markdown", "## A\n```toml\nq1 = 'A'\n```"))
    located = Located(files={"rnn.ipynb": data, nb.ANSWERS_FILE: b"q1 = 'Z'\n"})
    nb.use_notebook(located, "rnn.py", 10.0, KEYS)
    assert located.files[nb.ANSWERS_FILE] == b"q1 = 'Z'\n"
    assert located.notebook.answers_from == "file"
    located = Located(files={"rnn.ipynb": data})
    nb.use_notebook(located, "rnn.py", 10.0, KEYS)
    assert b"q1 = 'A'" in located.files[nb.ANSWERS_FILE]
    assert located.notebook.answers_from == "markdown"
