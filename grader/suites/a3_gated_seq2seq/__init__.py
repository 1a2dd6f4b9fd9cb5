"""Hidden suite of a3_gated_seq2seq: LSTM/GRU cells, attention scores, beam search, BLEU.

This module assembles the questions; their cases and mutants live in the topic modules beside it.
"""

# Every expected value comes from `reference/` (gated, seq2seq, bleu); every mutant is a
# reference function with one hook turned (see those modules' docstrings). Hidden cases are
# drawn from numpy.random.default_rng([salt, seed]) and chosen so that the reference and each
# mutant disagree far beyond the tolerance (non-square shapes, a square non-symmetric W,
# pre-activations of order 1 so tanh matters, beam trees where length normalisation changes
# the winner, BLEU corpora with repeated words, short candidates and closest != shortest
# references, greedy trees with exact ties for the best token, an eos before max_len and none
# within it; their probabilities are at least 0.02 apart elsewhere, so float32 work picks the
# same argmax).

from __future__ import annotations

from grader.questions import Assignment
from grader.suites._kit import builder
from grader.suites.a3_gated_seq2seq.attention import (
    _additive_cases,
    _additive_no_tanh,
    _attend_cases,
    _attend_no_softmax,
    _dot_cases,
    _multiplicative_cases,
    _multiplicative_transposed,
    _reduced_rank_cases,
)
from grader.suites.a3_gated_seq2seq.bleu_cases import BLEU_CONVENTIONS, BLEU_MUTANTS, _bleu_cases
from grader.suites.a3_gated_seq2seq.cells import (
    CELL_SHORTCUTS,
    _gru_cases,
    _gru_flipped,
    _gru_reset_before,
    _lstm_cases,
    _lstm_gate_order,
    _lstm_old_cell,
)
from grader.suites.a3_gated_seq2seq.decoding import (
    BEAM_MUTANTS,
    BOS,
    EOS,
    GREEDY_MUTANTS,
    _beam_domain_cases,
    _greedy_cases,
    _random_tree,
    _table_beam_search,
)
from grader.suites.a3_gated_seq2seq.written import (
    WRITTEN,
    _attn_raw,
    _bp,
    _greedy_vs_best,
    _written,
)
from reference import bleu, gated, seq2seq

# What other modules and the tests read from the suite (the private names: tests).
__all__ = [
    "ASSIGNMENT",
    "BOS",
    "EOS",
    "bleu",
    "gated",
    "seq2seq",
    "_attn_raw",
    "_bp",
    "_random_tree",
    "_table_beam_search",
]

FILE = "gated_seq2seq.py"


# ---------------------------------------------------------------- the assignment


_q = builder("a3", FILE)  # every code question of a3 (grader/suites/_kit.py)


CODE = (
    _q(
        "lstm_cell",
        "LSTM cell (torch.nn.LSTMCell conventions)",
        9,
        "lstm_cell",
        gated.lstm_cell,
        _lstm_cases,
        mutants={"lstm-gate-order": _lstm_gate_order, "lstm-output-uses-old-cell": _lstm_old_cell},
        forbidden=CELL_SHORTCUTS,
        output_names=("h_new", "c_new"),
    ),
    _q(
        "gru_cell",
        "GRU cell (torch.nn.GRUCell conventions)",
        9,
        "gru_cell",
        gated.gru_cell,
        _gru_cases,
        mutants={"gru-reset-before-matmul": _gru_reset_before, "gru-update-flipped": _gru_flipped},
        forbidden=CELL_SHORTCUTS,
    ),
    _q("dot_scores", "Dot-product scores", 3, "dot_scores", seq2seq.dot_scores, _dot_cases),
    _q(
        "multiplicative_scores",
        "Multiplicative scores",
        4,
        "multiplicative_scores",
        seq2seq.multiplicative_scores,
        _multiplicative_cases,
        mutants={"multiplicative-transposed": _multiplicative_transposed},
    ),
    _q(
        "reduced_rank_scores",
        "Reduced-rank multiplicative scores",
        4,
        "reduced_rank_scores",
        seq2seq.reduced_rank_scores,
        _reduced_rank_cases,
    ),
    _q(
        "additive_scores",
        "Additive scores",
        5,
        "additive_scores",
        seq2seq.additive_scores,
        _additive_cases,
        mutants={"additive-missing-tanh": _additive_no_tanh},
    ),
    # No follow-through dependency (issue 19, FT.md): `attend(scores, H)` receives the scores as an
    # argument and calls none of the score functions, and no other a3 function calls an earlier
    # graded function (greedy decoding does not call beam search), so nothing is declared.
    _q(
        "attend",
        "Attention: softmax and weighted sum",
        5,
        "attend",
        seq2seq.attend,
        _attend_cases,
        mutants={"attention-no-softmax": _attend_no_softmax},
        output_names=("alpha", "a"),
    ),
    _q(
        "beam_search",
        "Beam search with length normalisation",
        12,
        "beam_search",
        seq2seq.beam_search,
        _beam_domain_cases,
        mutants=BEAM_MUTANTS,
        integer=True,
    ),
    _q(
        "corpus_bleu",
        "Corpus BLEU",
        12,
        "corpus_bleu",
        bleu.corpus_bleu,
        _bleu_cases,
        mutants={**BLEU_MUTANTS, **BLEU_CONVENTIONS},
    ),
)

# Added after the original questions so that their numbers stay as they were.
GREEDY = (
    _q(
        "greedy",
        "Greedy decoding",
        5,
        "greedy_decode",
        seq2seq.greedy_decode,
        _greedy_cases,
        mutants=GREEDY_MUTANTS,
        integer=True,
    ),
    _written("greedy_vs_best", "Greedy cannot undo a bad choice", 3, "array", _greedy_vs_best),
)

ASSIGNMENT = Assignment(
    id="a3_gated_seq2seq",
    title="a3: Gated RNNs, attention, beam search and BLEU",
    code_file=FILE,
    questions=CODE + WRITTEN + GREEDY,
)
