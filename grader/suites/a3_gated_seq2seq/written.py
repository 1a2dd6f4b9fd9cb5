"""a3's written questions: the expected answers from the student's variant numbers and the
wrong forms each names."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from grader.questions import TableLM, WrittenQuestion, WrongForm
from grader.suites.a3_gated_seq2seq.attention import _sum_normalize
from grader.suites.a3_gated_seq2seq.decoding import BOS, EOS, _beam, _row
from reference import bleu, seq2seq

# ---------------------------------------------------------------- written questions


def _attn_scores(v: dict[str, Any]) -> np.ndarray:
    return seq2seq.dot_scores(np.array(v["attention_s"], float), np.array(v["attention_H"], float))


def _attn(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(_attn_scores(v), np.array(v["attention_H"], float))


def _attn_raw(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(_attn_scores(v), np.array(v["attention_H"], float), normalize=lambda e: e)


def _attn_sum(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(
        _attn_scores(v), np.array(v["attention_H"], float), normalize=_sum_normalize
    )


def _no_softmax_forms(v: dict[str, Any], part: int) -> list[WrongForm]:
    """The raw-score weights (part 0) or output (part 1), and the sum-normalised ones when they
    exist (the scores' sum is not 0) and differ from the raw ones (the sum is not 1)."""
    what = (
        "these are the raw scores used as weights",
        "this output weights the h_i by the raw scores",
    )
    forms = [
        WrongForm(
            _attn_raw(v)[part],
            "attention-no-softmax",
            f"{what[part]}: the softmax step is missing.",
        )
    ]
    total = float(_attn_scores(v).sum())
    if total != 0.0 and not math.isclose(total, 1.0):
        what = (
            "these are the scores divided by their sum",
            "this output weights the h_i by the scores divided by their sum",
        )
        forms.append(
            WrongForm(
                _attn_sum(v)[part],
                "attention-no-softmax",
                f"{what[part]}: the softmax exponentiates first, α_i = exp(e_i) / Σ_j exp(e_j).",
            )
        )
    return forms


def _tree_beam(v: dict[str, Any], normalize: bool) -> list[int]:
    def logs(row):
        return tuple(math.log(p) if p > 0 else -math.inf for p in row)

    lm = TableLM(
        table={tuple(k): logs(r) for k, r in v["beam_tree"].items()},
        default=logs(v["beam_default"]),
    )
    return _beam(lm, int(v["beam_size"]), int(v["beam_max_len"]), normalize)


def _bp(v: dict[str, Any], ref_length=bleu.closest_reference_length) -> float:
    cs, refs = v["bleu_candidate_lengths"], v["bleu_reference_lengths"]
    r = sum(ref_length(c, lens) for c, lens in zip(cs, refs))
    return bleu.brevity_penalty(sum(cs), r)


def _greedy_tree_of(v: dict[str, Any]) -> TableLM:
    """The student's two-step tree (ids: 0 <bos>, 1 <eos>, 2 a, 3 b), from variant.py's numbers."""
    p_a, q_a, q_b = float(v["greedy_p_a"]), float(v["greedy_q_a"]), float(v["greedy_q_b"])
    A, B = 2, 3
    return TableLM(
        table={
            (BOS,): _row(0.0, p_a, 1.0 - p_a),
            (BOS, A): _row(q_a, (1 - q_a) / 2, (1 - q_a) / 2),
            (BOS, B): _row(q_b, 1.0 - q_b, 0.0),
        },
        default=_row(1.0, 0.0, 0.0),
    )


def _greedy_vs_best(v: dict[str, Any]) -> list[float]:
    """[P(greedy's output), P(the most probable output ending in <eos> within 2 tokens)]."""
    lm = _greedy_tree_of(v)

    def prob(tokens: list[int]) -> float:
        return math.exp(sum(float(lm([BOS, *tokens[:i]])[t]) for i, t in enumerate(tokens)))

    finished = [[EOS]] + [[w, EOS] for w in (2, 3)]
    greedy = seq2seq.greedy_decode(lm, BOS, EOS, 2)
    return [prob(greedy), max(prob(t) for t in finished)]


def _written(
    name: str,
    title: str,
    points: float,
    answer_kind: str,
    expected: Callable[[dict[str, Any]], Any] | None = None,
    key: str = "",
    **fields: Any,
) -> WrittenQuestion:
    """A written question of a3: id `a3.w_<name>`, answers.toml key `key` (default: the name)."""
    return WrittenQuestion(
        id=f"a3.w_{name}",
        title=title,
        points=points,
        key=key or name,
        answer_kind=answer_kind,  # type: ignore[arg-type]
        expected=expected,
        **fields,
    )


def _answer(text: str) -> Callable[[dict[str, Any]], str]:
    """The same answer for every student."""
    return lambda v: text


def _carry_forms(v: dict[str, Any]) -> list[WrongForm]:
    """The broken steps of the cell-carry derivation, each at its own id."""
    return [
        WrongForm(
            "1",
            "lstm-carry-identity",
            "the cell update does not pass the old cell on unchanged: look at what multiplies c_prev.",
        ),
        WrongForm(
            "o_t (1 - tanh(c_t)^2) f_t",
            "lstm-carry-through-output",
            "this differentiates the hidden state h_t = o_t tanh(c_t), not the cell c_t.",
        ),
        WrongForm(
            "f_t (1 - f_t)",
            "lstm-carry-gate-derivative",
            "this is the derivative of the gate's sigmoid, not the derivative by c_prev.",
        ),
    ]


def _beam_raw_forms(v: dict[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _tree_beam(v, False),
            "beam-no-length-normalization",
            "this is the winner by the raw summed log-probability; the question "
            "divides each finished score by its number of tokens.",
        )
    ]


def _bp_forms(v: dict[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _bp(v, lambda c, lens: min(lens)),
            "bleu-shortest-reference",
            "this uses the shortest reference of each sentence; r sums the closest ones.",
        ),
        WrongForm(
            1.0,
            "bleu-no-brevity-penalty",
            "the candidate corpus is shorter than r, so the penalty exp(1 - r/c) applies.",
        ),
    ]


# What the written questions expect, and the wrong forms they name.
_ABCD = {"choices": ("A", "B", "C", "D")}
_ATTN_WEIGHTS = {
    "expected": lambda v: _attn(v)[0],
    "wrong_forms": lambda v: _no_softmax_forms(v, 0),
}
_ATTN_OUTPUT = {"expected": lambda v: _attn(v)[1], "wrong_forms": lambda v: _no_softmax_forms(v, 1)}
_BEAM_NORM = {
    "expected": lambda v: _tree_beam(v, True),
    "ordered": True,
    "wrong_forms": _beam_raw_forms,
}
_BEAM_RAW = {"expected": lambda v: _tree_beam(v, False), "ordered": True}
_BREVITY = {"expected": _bp, "key": "bleu_brevity_penalty", "wrong_forms": _bp_forms}
_PARAMETERS = ("d_s", "d_h", "k")
# The parameter counts of the three score functions: (name, score, the count in d_s, d_h, k).
PARAMETER_COUNTS = tuple(
    (name, score, {"expected": _answer(count), "symbols": _PARAMETERS})
    for name, score, count in (
        ("multiplicative", "multiplicative", "d_s*d_h"),
        ("reduced_rank", "reduced-rank", "k*(d_s + d_h)"),
        ("additive", "additive", "k*(d_s + d_h) + k"),
    )
)

WRITTEN = (
    _written(
        "lstm_carry",
        "LSTM: the cell-carry derivative",
        3,
        "expression",
        _answer("f_t"),
        # the gates held fixed; c_t and h_t as defined names, so that a derivation may start
        # from d/dc_prev c_t or from the cell update written out
        symbols=("f_t", "i_t", "o_t", "g_t", "c_prev", "c_t", "h_t"),
        relations=("c_t = f_t c_prev + i_t g_t", "h_t = o_t tanh(c_t)"),
        steps=True,
        wrong_forms=_carry_forms,
    ),
    _written("gru_merges", "GRU: what the update gate merges", 3, "choice", _answer("A"), **_ABCD),
    _written("attn_scores", "Attention by hand: scores", 2, "array", _attn_scores),
    _written("attn_weights", "Attention by hand: weights", 3, "array", **_ATTN_WEIGHTS),
    _written("attn_output", "Attention by hand: output", 3, "array", **_ATTN_OUTPUT),
    *(
        _written(f"params_{name}", f"Parameters: {score} score", 2, "expression", **count)
        for name, score, count in PARAMETER_COUNTS
    ),
    _written("beam_normalized", "Beam search by hand: length-normalised", 3, "list", **_BEAM_NORM),
    _written("beam_raw", "Beam search by hand: raw score", 3, "list", **_BEAM_RAW),
    _written("bleu_brevity", "BLEU: brevity penalty by hand", 3, "number", **_BREVITY),
)
