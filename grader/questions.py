"""The question model: an assignment is data, a list of questions with their cases.

A code question names the student function it calls, the trusted reference it is
compared with, the cases it runs (fixed ones and ones generated from the variant seed),
and the mutants (one per misconception id) that explain a wrong answer. A written
question names the `answers.toml` key it reads and how the expected answer is computed
from the student's variant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

if TYPE_CHECKING:  # numpy is imported where a table is called, not to read the question model
    import numpy as np

Visibility = Literal["visible", "hidden", "after_due_date", "after_published"]
VISIBILITIES: tuple[str, ...] = get_args(Visibility)  # Gradescope's values, in one place
AnswerKind = Literal["expression", "number", "array", "shape", "choice", "list", "text"]


@dataclass(frozen=True)
class Case:
    """One call of a student function."""

    name: str
    """Shown in feedback: "notes microscope", "hidden case 3"."""
    args: tuple[Any, ...]
    """Positional arguments (ndarrays, ints, lists, Rng/LM specs)."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    visible: bool = False
    """A visible case may show its inputs and expected output."""
    weight: float = 1.0
    """Share of the question's points, relative to the other cases."""


@dataclass(frozen=True)
class Tolerance:
    """Array and scalar tolerance: |got - want| <= atol + rtol * |want| everywhere.

    The defaults accept float32 work (about 1e-7 relative per operation, accumulated
    over a few hundred operations) while staying far below the size of any conceptual
    mistake on the hidden cases.
    """

    rtol: float = 1e-4
    atol: float = 1e-6


@dataclass
class Judgement:
    """What a custom judge concluded from all of a question's outputs together."""

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    """(what, passed, detail for the student) for each check."""
    misconceptions: list[str] = field(default_factory=list)
    """Catalog ids the outputs show."""
    fatal: str | None = None
    """The outputs are unusable (type, shape): nothing else could be checked."""
    how: str = ""
    """How the checks were made, shown after "k/n checks passed"."""

    @property
    def fraction(self) -> float:
        """The share of the points earned: the share of checks passed (0 when fatal)."""
        if self.fatal is not None or not self.checks:
            return 0.0
        return sum(ok for _, ok, _ in self.checks) / len(self.checks)


class CustomJudge(Protocol):
    """Judges a question's outputs together: `outputs[i]` is the student's plain-data output
    for `cases[i]`, None when that call failed or was not run."""

    def __call__(self, cases: Sequence[Case], outputs: Sequence[Any]) -> Judgement: ...


@dataclass(frozen=True)
class CodeQuestion:
    """A question graded by calling one graded function of the student's file."""

    id: str
    """The question's id, `<assignment short id>.<name>` ("a1.softmax")."""
    title: str
    points: float
    file: str
    """The student's file, e.g. "word_vectors.py"."""
    function: str
    """The graded function it calls."""
    reference: Callable[..., Any]
    """The trusted function with the same signature."""
    cases: Callable[[int], Sequence[Case]]
    """Variant seed -> cases."""
    mutants: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Misconception id -> trusted mutant."""
    forbidden: tuple[str, ...] = ()
    """Dotted library names that count as a shortcut."""
    forbid_in: Literal["function", "file"] = "function"
    """Where the source scan looks."""
    tolerance: Tolerance = Tolerance()
    integer: bool = False
    """Exact comparison (counts, ids, shapes)."""
    torch_inputs: bool = False
    """Arrays arrive as torch tensors in the student's process (a5); the reference and the
    mutants still get NumPy arrays (the grader never needs torch)."""
    output_names: tuple[str, ...] = ()
    """Names of a tuple's elements for feedback ("loss", "grad_v_c")."""
    visibility: Visibility | None = None
    """Gradescope's; None = the assignment's default."""
    # A custom judge for questions that are not "compare with the reference" (random
    # procedures graded by distribution): the engine calls every case (and handles failures,
    # timeouts, shortcuts), then the judge reads all the outputs together.
    custom: CustomJudge | None = None
    # Follow-through credit: the earlier questions whose student functions this one
    # builds on (MHA on scaled dot-product attention). When this question is wrong and a
    # dependency was docked with a named mistake, the question is judged again against its
    # mutant for that mistake (the mistake lifted to the composite); a match earns
    # `follow_through` (None: the assignment's share) of the points instead of a second charge.
    depends_on: tuple[str, ...] = ()
    follow_through: float | None = None
    kind: Literal["code"] = "code"


@dataclass(frozen=True)
class WrongForm:
    """A known wrong answer to a written question, with the mistake it shows."""

    answer: Any
    """An expression string, a number, an array or a choice."""
    misconception: str
    """Catalog id."""
    message: str
    """What to tell the student, in the notes' vocabulary."""


@dataclass(frozen=True)
class WrittenQuestion:
    """A question answered in `answers.toml` under `key`."""

    id: str
    title: str
    points: float
    key: str
    """The answers.toml key."""
    answer_kind: AnswerKind
    expected: Callable[[Mapping[str, Any]], Any]
    """The student's variant numbers -> expected answer."""
    symbols: tuple[str, ...] = ()
    """Declared symbols, for expression answers."""
    relations: tuple[str, ...] = ()
    """Declared relations between them, "h = tanh(z)": used when comparing."""
    tolerance: Tolerance = Tolerance(rtol=1e-3, atol=1e-4)
    """Numbers: matches the precision asked for."""
    wrong_forms: Callable[[Mapping[str, Any]], Sequence[WrongForm]] | None = None
    choices: tuple[str, ...] = ()
    """Allowed letters for choice answers."""
    ordered: bool = False
    """List answers: does the order matter (BPE merges, beam outputs)?"""
    visibility: Visibility | None = None
    """Gradescope's; None = the assignment's default."""
    # Reading options (docs/answers.md):
    example: str | None = None
    """Shown in refusals: "4718592", "s t</w>", "2 d_k + 1"."""
    integer: bool | None = None
    """An exact count; None: inferred from the key and tolerance."""
    count_right_from: int = 4
    """A wrong list this long says how many items are right; 0: never."""
    steps: bool = False
    """The answer may be a derivation: steps checked one by one."""
    step_share: float = 0.5
    """Right result through a broken step: this share of the points."""
    max_steps: int = 30
    """Steps of one derivation that are checked."""
    kind: Literal["written"] = "written"


Question = CodeQuestion | WrittenQuestion


@dataclass(frozen=True)
class Assignment:
    """One assignment: its id, its files, its questions."""

    id: str
    """The assignment's full id ("a1_word_vectors")."""
    title: str
    code_file: str | None
    """The student's code file ("word_vectors.py"); None when there is no code part."""
    questions: tuple[Question, ...]
    preload_torch: bool = False
    """Inputs are torch tensors and the worker needs torch (a5)."""
    visibility: Visibility = "visible"
    """Default for questions that do not set one."""
    reveal_answers: Literal["after_due_date", "after_published", "visible", "never"] = (
        "after_due_date"
    )
    """When the answer-key test (the student's own expected written answers) becomes visible
    ("never" keeps it hidden)."""
    show_student_output: bool = False
    """Whether the student sees what their code printed."""
    hidden_feedback: Literal["category", "pass-fail", "summary"] = "category"
    """How much of a hidden case a student sees (docs/feedback.md): "category" (label, passed or
    not, which output, a category in fixed words), "pass-fail" (label and ✔/✘), "summary"
    (only how many hidden cases passed)."""
    variant_key: Literal["email", "sid"] = "email"
    """Which field of the submitter is the variant key."""
    follow_through: float = 1.0
    """Share of a question's points when only a carried mistake explains it."""
    per_student: frozenset[str] | None = None
    """The ids of the questions whose hidden cases or expected answer depend on the variant
    key, as the registry decided when it loaded the assignment; None: not decided (built by
    hand)."""

    def resolved(self, q: Question) -> Question:
        """The question with its effective visibility: its own, else the assignment's."""
        return q if q.visibility else replace(q, visibility=self.visibility)

    @property
    def total_points(self) -> float:
        return sum(q.points for q in self.questions)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)


# Special arguments built in the student's process from plain data (see grader.sandbox.worker).


@dataclass(frozen=True)
class Rng:
    """A numpy.random.Generator the grader controls: default_rng(seed) on both sides."""

    seed: int

    def wire_spec(self) -> tuple[str, Any]:
        """("rng", seed): the worker builds numpy.random.default_rng(seed) from it."""
        return "rng", int(self.seed)


@dataclass(frozen=True)
class TableLM:
    """A `next_log_probs(prefix)` callable for beam search, defined by a table.

    `table` maps a prefix (tuple of token ids, bos included) to a list of log-probabilities
    over the vocabulary; prefixes not in the table get `default`.
    """

    table: Mapping[tuple[int, ...], tuple[float, ...]]
    default: tuple[float, ...]

    def __call__(self, prefix: Sequence[int]) -> np.ndarray:
        """next_log_probs(prefix) on the trusted side: its row for tuple(prefix), else the default."""
        import numpy as np

        row = self.table.get(tuple(int(t) for t in prefix), self.default)
        return np.asarray(row, dtype=np.float64)  # (V,) a fresh array each call

    def to_spec(self) -> dict[str, Any]:
        """The table as plain data for the worker's wire (the worker rebuilds the callable)."""
        return {
            "table": [[list(k), list(v)] for k, v in self.table.items()],
            "default": list(self.default),
        }

    def wire_spec(self) -> tuple[str, Any]:
        """("lm", to_spec()): the worker rebuilds the callable from it."""
        return "lm", self.to_spec()
