"""The hidden suite of a2 (RNNs and backpropagation through time), notes §2 and the slides'
two-unit RNN microscope.

Hidden cases use a square W_h and a non-square W_x (H != D), so that a transposed outer
product or a transposed weight shows as a shape error or a value change; inputs are large
enough that z_t is far from 0 (1 - z^2 differs clearly from 1 - h^2); T >= 4 in hidden
cases; some cases start from a nonzero h0 (then G_0 is not zero, and the h0 mistakes show).
The cross-entropy questions each have a hidden case with logits in the hundreds: a softmax
without the max shift, with a min shift or with one shift for all rows gives NaN or inf there,
while log-softmax and a stable softmax followed by its log pass, in float64 and float32. NaN
is no evidence of one mistake over another, so that case names nothing by itself. Every
mutant is one call of the reference with one hook swapped (reference/bptt.py and
reference/rnn.py document the hooks).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Assignment, Case, Tolerance, WrongForm
from grader.suites._kit import choice, reference_builder, shown, slipped, written
from reference.bptt import (
    bptt_final_state,
    bptt_ledger,
    bptt_sequence_ce,
    clip_by_global_norm,
    final_state_signal,
    global_norm,
    jacobian_path_norm,
)
from reference.rnn import (
    output_logits,
    previous_states,
    rnn_forward,
    sequence_ce,
    sequence_perplexity,
)

FILE = "rnn.py"
NO_AUTOGRAD = ("torch.Tensor.backward", "torch.autograd.*", "torch.func.*")

# The slides' microscope (Week 06, "Small numbers make the forward pass visible", "A
# final-state loss starts a simple backward pass", "The same states produce three-class
# predictions").
X_MIC = np.array([[1.0, -0.5], [0.2, 0.8], [-0.4, 0.3]])
W_X_MIC = np.array([[0.3, -0.2], [0.1, 0.4]])
W_H_MIC = np.array([[0.5, 0.1], [-0.2, 0.3]])
B_H_MIC = np.array([0.05, -0.10])
Y_MIC = np.array([0.20, -0.15])
W_O_MIC = np.array([[0.4, -0.2], [-0.3, 0.5], [0.1, 0.2]])
B_O_MIC = np.array([0.02, -0.04, 0.01])
TARGETS_MIC = np.array([0, 2, 1])


# ---------------------------------------------------------------------------- mutants


def forward_weights_transposed(X, W_x, W_h, b_h, h0=None):
    """`rnn-weights-transposed`: h_{t-1} W_h instead of h_{t-1} W_h^T.

    With H != D the transposed input weight (x_t W_x) is a shape error the student meets
    and fixes at once; the square W_h lets the same slip through silently, so this is the
    form of the mistake that survives to produce numbers.
    """
    return rnn_forward(X, W_x, np.asarray(W_h).T, b_h, h0)


def forward_bias_twice(X, W_x, W_h, b_h, h0=None):
    """`rnn-bias-counted-twice`: torch.nn.RNN's b_ih + b_hh with b_h given to both."""
    return rnn_forward(X, W_x, W_h, 2.0 * np.asarray(b_h, dtype=np.float64), h0)


def h0_ignored(fn):
    """`rnn-h0-ignored`: the forward pass starts from zeros whatever h0 is given (the
    reference called without h0; where no h0 is given this is the reference itself)."""
    return lambda *a, **k: fn(*a, **{key: v for key, v in k.items() if key != "h0"})


def _h_t_for_h_prev(Hs, h0):
    """`bptt-uses-current-state`: G_t = (g^z_t)^T h_t, the state the step produced."""
    return np.asarray(Hs, dtype=np.float64)


def _h0_left_out(Hs, h0):
    """`bptt-h0-missing-from-gradient`: h_{-1} taken as zeros in ∂L/∂W_h although h0 is given."""
    return previous_states(Hs)


def _ones(Z, Hs):
    return np.ones_like(np.asarray(Hs, dtype=np.float64))


def _one_minus_z2(Z, Hs):
    return 1.0 - np.asarray(Z, dtype=np.float64) ** 2


def _one_minus_tanh_h2(Z, Hs):
    return 1.0 - np.tanh(np.asarray(Hs, dtype=np.float64)) ** 2


def _outer_transposed(g, v):
    return np.outer(v, g)


def _last_row_only(direct):
    kept = np.zeros_like(direct)
    kept[-1] = direct[-1]
    return kept


def _bptt_mutants(fn, *, ce: bool) -> dict[str, Any]:
    """The BPTT mistakes as calls of `fn` (reference bptt_final_state or bptt_sequence_ce)."""

    def hooked(**hooks):
        return partial(fn, **hooks)  # hooks of one reference: two such mistakes combine

    def forms(*hook_sets):
        """One mistake, several natural outputs (AnyOf); with the CE loss each form also comes
        with the output layer's sums (W_o, b_o) made the same way as the recurrent ones."""
        if ce:
            hook_sets = tuple(h | o for h in hook_sets for o in ({}, {"output_hooks": True}))
        return lambda *a, **k: AnyOf(*(fn(*a, **k, **h) for h in hook_sets))

    mutants = {
        # root causes first: forward-pass bugs inside a BPTT function
        "rnn-weights-transposed": hooked(forward=forward_weights_transposed),
        "rnn-h0-ignored": h0_ignored(fn),
        "rnn-bias-counted-twice": hooked(forward=forward_bias_twice),
        "bptt-missing-tanh-derivative": hooked(activation_derivative=_ones),
        "bptt-derivative-of-preactivation": hooked(activation_derivative=_one_minus_z2),
        "bptt-tanh-derivative-of-state": hooked(activation_derivative=_one_minus_tanh_h2),
        "bptt-outer-product-transposed": forms({"outer": _outer_transposed}),
        "bptt-backward-weights-transposed": hooked(backward_matrix=np.transpose),
        "bptt-uses-current-state": hooked(recurrent_inputs=_h_t_for_h_prev),
        "bptt-h0-missing-from-gradient": hooked(recurrent_inputs=_h0_left_out),
        # one use kept instead of the sum: the final position's (no loop over t), or the first
        # position's (an accumulator overwritten, `dW = ...` for `dW += ...`, in the loop that
        # runs backward from T-1 to 0)
        "bptt-last-use-only": forms({"uses": [-1]}, {"uses": [0]}),
    }
    if ce:
        mutants.update(
            {
                "ce-sum-not-mean": hooked(scale=1.0),
                "ce-double-mean": lambda *a, **k: fn(*a, **k, scale=1.0 / len(a[0]) ** 2),
                "bptt-missing-direct-term": hooked(direct_filter=_last_row_only),
                # with a final-state loss this is bptt-last-use-only's output exactly, so it is
                # named only here, where the two differ
                "bptt-missing-future-term": hooked(carry=False),
                # the loss in bits, its gradients in nats (the usual p - onehot) or in bits too
                "ce-in-bits": lambda *a, **k: AnyOf(
                    fn(*a, **k, log_base=2.0),
                    fn(*a, **k, log_base=2.0, scale=1.0 / (len(a[0]) * np.log(2.0))),
                ),
            }
        )
    return mutants


def clip_per_tensor(grads, max_norm):
    """`clip-per-tensor`: each array clipped by its own norm."""
    return {k: clip_by_global_norm({k: g}, max_norm)[k] for k, g in grads.items()}


def clip_always_rescales(grads, max_norm):
    """`clip-always-rescales`: g · c/‖g‖ even when ‖g‖ <= c (small gradients scaled up). A zero
    gradient has no c/0: there the mistake shows nothing (the right output), so a NaN or a
    crash of the student's there is no evidence for it."""
    if global_norm(grads) == 0.0:
        return clip_by_global_norm(grads, max_norm)
    return clip_by_global_norm(grads, max_norm, factor=lambda norm, c: c / norm)


def clip_by_value(grads, max_norm):
    """`clip-by-value`: every entry clipped to [-c, c] (min-char-rnn's np.clip, clip_grad_value_)."""
    return {
        k: np.clip(np.asarray(g, dtype=np.float64), -max_norm, max_norm) for k, g in grads.items()
    }


def perplexity_in_bits(logits, targets):
    """`ce-in-bits`: CE with log base 2; its perplexity 2^CE (right) or exp(CE) (wrong too)."""
    ce = sequence_ce(logits, targets, base=2.0)
    return AnyOf((ce, float(2.0**ce)), (ce, float(np.exp(ce))))


def perplexity_in_log10(logits, targets):
    """`ce-in-log10`: CE with log base 10 (KenLM's and SRILM's scores); its perplexity 10^CE
    (right) or exp(CE) (wrong too)."""
    ce = sequence_ce(logits, targets, base=10.0)
    return AnyOf((ce, float(10.0**ce)), (ce, float(np.exp(ce))))


def perplexity_base_2(logits, targets):
    """`perplexity-base-2`: 2^CE with CE in nats."""
    ce, _ = sequence_perplexity(logits, targets)
    return ce, float(2.0**ce)


def perplexity_of_summed_ce(logits, targets):
    """`ce-sum-not-mean`: the per-position losses summed, then exponentiated."""
    ce = sequence_ce(logits, targets, reduce=np.sum)
    return ce, float(np.exp(ce))


# ---------------------------------------------------------------------------- cases


def _rnn_params(rng: np.random.Generator, T: int, D: int, H: int, *, h0: bool) -> dict[str, Any]:
    """Inputs and weights with |z_t| around 1: tanh neither linear nor saturated."""
    return {
        "X": rng.normal(0.0, 1.0, size=(T, D)),
        "W_x": rng.normal(0.0, 0.8 / np.sqrt(D) * 1.5, size=(H, D)),
        "W_h": rng.normal(0.0, 0.9 / np.sqrt(H) * 1.2, size=(H, H)),
        "b_h": rng.normal(0.0, 0.5, size=H),
        "h0": rng.uniform(-0.8, 0.8, size=H) if h0 else None,
    }


# (T, D, H, nonzero h0). T >= 4 in hidden cases: a backward loop that stops one step early
# (range(T-1, 1, -1)) then keeps more than the last use and is not mistaken for bptt-last-use-only.
_SHAPES = ((4, 5, 3, False), (5, 4, 3, True), (6, 2, 4, True))


def _hidden(rng: np.random.Generator) -> list[dict[str, Any]]:
    return [_rnn_params(rng, T, D, H, h0=h0) for T, D, H, h0 in _SHAPES]


def _label(i: int, p: dict[str, Any], extra: str = "") -> str:
    """What a hidden case exercises: its sizes and whether h0 is given (never its values)."""
    (T, D), H = p["X"].shape, p["W_h"].shape[0]
    start = "h0 given" if p["h0"] is not None else "no h0 (zeros)"
    return f"hidden case {i + 1}: T={T}, D={D}, H={H}, {start}{extra}"


def _args(p: dict[str, Any], *extra: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args = (p["X"], p["W_x"], p["W_h"], p["b_h"], *extra)
    return args, ({} if p["h0"] is None else {"h0": p["h0"]})


def forward_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([201, seed])
    cases = shown("slides' microscope (D = H = 2)", X_MIC, W_X_MIC, W_H_MIC, B_H_MIC)
    for i, p in enumerate(_hidden(rng)):
        args, kwargs = _args(p)
        cases.append(Case(_label(i, p), args, kwargs))
    return cases + _forward_edges(seed)


# The input domain of every graded function, argument by argument (issue 33, item 4): what the
# handout allows, and the edges the hidden cases are drawn at. Edge cases come after a
# question's other cases, from a stream of their own (salts 251 …), so that every earlier case
# stays exactly as it was.
DOMAINS: dict[str, dict[str, Any]] = {
    "a2.rnn_forward": {
        "X": "(T, D) float, T >= 1: T = 1 (one step)",
        "W_x, W_h, b_h": "(H, D), (H, H), (H,): H != D (H = 1 allowed, not drawn: it hides "
        "rnn-weights-transposed)",
        "h0": "(H,) or None (zeros)",
    },
    "a2.bptt_final_state": {
        "X, W_x, W_h, b_h, h0": "as in rnn_forward; T >= 4 drawn (T = 1 allowed, not drawn: "
        "one use of W_h and no step back hide most BPTT mistakes; T = 1 is rnn_forward's edge)",
        "y": "(H,) float",
    },
    "a2.bptt_sequence_ce": {
        "X, W_x, W_h, b_h, h0": "as in rnn_forward",
        "W_o, b_o": "(C, H), (C,): logits in the hundreds",
        "targets": "(T,) ints in [0, C), repeated classes",
    },
    "a2.clip_by_global_norm": {
        "grads": "{name: array} of any shapes: one array under c alone, all far above, all zero",
        "max_norm": "c > 0, below and above the global norm",
    },
    "a2.sequence_perplexity": {
        "logits": "(T, V) float, T >= 1: T = 1; logits in the hundreds; V = 300",
        "targets": "(T,) ints in [0, V): ids above 256",
    },
}


def _forward_edges(seed: int) -> list[Case]:
    """One step (T = 1): stacked column states squeezed with `.squeeze()` lose the axis of
    length 1 there, and (T, H) must stay (T, H). (H = 1 is in the domain too, but it hides
    `rnn-weights-transposed`, a 1 × 1 W_h being its own transpose, so no case is drawn there.)"""
    rng = np.random.default_rng([251, seed])
    one_step = _rnn_params(rng, 1, 3, 2, h0=True)
    return [Case("hidden case 4: T=1 (one step), D=3, H=2, h0 given", *_args(one_step))]


def final_state_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([202, seed])
    cases = shown("slides' microscope, y = (0.20, -0.15)", X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, Y_MIC)
    for i, p in enumerate(_hidden(rng)):
        H = p["W_h"].shape[0]
        args, kwargs = _args(p, rng.uniform(-0.9, 0.9, size=H))
        cases.append(Case(_label(i, p), args, kwargs))
    return cases


def sequence_ce_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([203, seed])
    cases = shown(
        "slides' microscope, targets (0, 2, 1)",
        X_MIC,
        W_X_MIC,
        W_H_MIC,
        B_H_MIC,
        W_O_MIC,
        B_O_MIC,
        TARGETS_MIC,
    )
    for i, p in enumerate(_hidden(rng)):
        T, H = p["X"].shape[0], p["W_h"].shape[0]
        C = 4 + i
        W_o = rng.normal(0.0, 1.2, size=(C, H))
        b_o = rng.normal(0.0, 0.5, size=C)
        targets = rng.integers(0, C, size=T)
        targets[-1] = targets[0]  # a repeated class
        args, kwargs = _args(p, W_o, b_o, targets)
        cases.append(Case(_label(i, p, f", C={C} classes, a repeated target"), args, kwargs))
    p = _rnn_params(rng, 5, 3, 4, h0=True)
    W_o, b_o, targets = _large_output_layer(rng, p)
    args, kwargs = _args(p, W_o, b_o, targets)
    cases.append(
        Case(
            _label(3, p, ", C=5 classes, logits in the hundreds (softmax stability)"), args, kwargs
        )
    )
    return cases


def _large_logits(logits: np.ndarray, targets: np.ndarray) -> bool:
    """Logits only a max-shifted softmax survives, and every correct way of computing the CE
    (log-softmax, or a stable softmax and then its log, in float64 or float32) passes.

    exp overflows without a shift (|a| > 720), with a min shift (a row spanning > 720), and a
    shift by the global max instead of each row's underflows a whole row (> 760 below). Each
    row's top two logits are > 30 apart (p_t is one-hot to float32 precision) and each target
    is its row's top logit or 30 to 80 below it (p_t[y_t] = e^-80 is still a normal float32).
    """
    top2 = np.sort(logits, axis=1)[:, -2:]  # (T, 2)
    row_max = logits.max(axis=1)  # (T,)
    gap = row_max - logits[np.arange(len(targets)), targets]  # (T,)
    return bool(
        np.abs(logits).max() > 720
        and np.ptp(logits, axis=1).max() > 720
        and row_max.max() - row_max.min() > 760
        and (top2[:, 1] - top2[:, 0]).min() > 30
        and np.all((gap == 0) | ((gap > 30) & (gap < 80)))
        and np.any(gap > 0)
    )


def _large_output_layer(
    rng: np.random.Generator, p: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_o (5, H), b_o (5,) and targets (T,) whose logits a_t = h_t W_o^T + b_o pass `_large_logits`.

    The biases make the logits large (+800 for classes 0, 1 and 4, -800 for class 2); class 1
    is class 0's near twin, 40 to 70 below it at every position, and is the target wherever
    class 0 wins, so the gradient g^a_t W_o = (w_0 - w_1)/T is a difference of two moderate
    rows (exact in float32 too). Class 4's weights are large: it wins some positions by
    hundreds and loses others by hundreds, which spreads the row maxima apart.
    """
    _, Hs = rnn_forward(p["X"], p["W_x"], p["W_h"], p["b_h"], p["h0"])
    T, H = Hs.shape
    for _ in range(1000):
        w = rng.normal(0.0, 2.0, size=(3, H))
        W_o = np.stack(
            [w[0], w[0] + rng.normal(0.0, 1.0, size=H), w[1], w[2], rng.normal(0.0, 900.0, size=H)]
        )  # (5, H)
        b_o = np.array([800.0, 745.0, -800.0, 0.0, 800.0]) + rng.normal(0.0, 5.0, size=5)  # (5,)
        b_o[1] = b_o[0] - 55.0
        logits = output_logits(Hs, W_o, b_o)  # (T, 5)
        targets = logits.argmax(axis=1)
        targets[targets == 0] = 1
        if _large_logits(logits, targets):
            return W_o, b_o, targets
    raise RuntimeError("no output layer with large logits found")  # does not happen: tested


def clip_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([204, seed])
    visible = {"W_h": np.array([[0.0, 3.0], [0.0, 0.0]]), "b_h": np.array([4.0, 0.0])}
    cases = shown("norm 5 clipped to 1", visible, 1.0)
    # one array below the threshold on its own, the whole gradient above it
    g = {
        "W_x": rng.normal(0, 1.0, size=(3, 4)),
        "W_h": rng.normal(0, 1.0, size=(3, 3)),
        "b_h": rng.normal(0, 0.1, size=3),
    }
    small, total = global_norm({"b_h": g["b_h"]}), global_norm(g)
    cases.append(
        Case(
            "hidden case 1: 3 arrays, b_h alone under max_norm, the whole gradient above it",
            (g, float(small + 0.5 * (total - small))),
        )
    )
    # every array above the threshold on its own: exploding gradients
    g = {
        "W_x": rng.normal(0, 50.0, size=(4, 2)),
        "W_h": rng.normal(0, 80.0, size=(4, 4)),
        "b_h": rng.normal(0, 30.0, size=4),
        "W_o": rng.normal(0, 40.0, size=(3, 4)),
    }
    cases.append(Case("hidden case 2: 4 arrays, exploding gradients far above max_norm", (g, 1.0)))
    # already small: unchanged
    g = {"W_h": rng.normal(0, 0.1, size=(2, 2)), "b_h": rng.normal(0, 0.1, size=2)}
    cases.append(
        Case(
            "hidden case 3: 2 arrays, the whole gradient under max_norm",
            (g, float(2.0 * global_norm(g) + 0.1)),
        )
    )
    # the domain's edge: a zero gradient (norm 0 <= c: returned unchanged, no division by 0)
    edge = np.random.default_rng([254, seed])
    zero = {"W_h": np.zeros((3, 3)), "b_h": np.zeros(3)}
    cases.append(
        Case(
            "hidden case 4: 2 arrays, every entry 0 (a zero gradient)",
            (zero, float(edge.uniform(0.5, 2.0))),
        )
    )
    return cases


def perplexity_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([205, seed])
    cases = shown("uniform over 4 classes", np.zeros((3, 4)), np.array([0, 3, 1]))
    for i, (T, V) in enumerate(((6, 5), (9, 12), (4, 3))):
        logits = rng.normal(0.0, 2.0 + i, size=(T, V))
        targets = rng.integers(0, V, size=T)
        targets[1] = targets[0]
        cases.append(
            Case(
                f"hidden case {i + 1}: T={T} positions, V={V} classes, a repeated target",
                (logits, targets),
            )
        )
    # Logits in the hundreds: rows shifted by ±800 (no shift overflows; a shift by the global
    # max underflows the low row) and one row spanning 800 (a min shift overflows).
    logits = rng.normal(0.0, 2.0, size=(6, 5))
    logits[0] += 800.0
    logits[1] -= 800.0
    logits[2] += np.array([400.0, 0.0, -400.0, 200.0, -200.0])
    targets = rng.integers(0, 5, size=6)
    targets[2] = int(np.argmax(logits[2]))  # a CE of a few nats: its perplexity stays finite
    cases.append(
        Case(
            "hidden case 4: T=6 positions, V=5 classes, logits in the hundreds (softmax stability)",
            (logits, targets),
        )
    )
    # the domain's edges: one position (T = 1), and 300 classes with targets above 256
    edge = np.random.default_rng([255, seed])
    cases.append(
        Case(
            "hidden case 5: T=1 position, V=4 classes",
            (edge.normal(0.0, 2.0, size=(1, 4)), edge.integers(0, 4, size=1)),
        )
    )
    cases.append(
        Case(
            "hidden case 6: T=5 positions, V=300 classes, targets above 256",
            (edge.normal(0.0, 2.0, size=(5, 300)), edge.integers(257, 300, size=5)),
        )
    )
    return cases


# ---------------------------------------------------------------------------- written answers


def _mic_variant(numbers: Mapping[str, Any]) -> dict[str, Any]:
    r = numbers["rnn"]
    return {k: np.asarray(r[k], dtype=np.float64) for k in ("X", "W_x", "W_h", "b_h", "y")} | {
        "t": int(r["t"])
    }


def g_matrix(numbers: Mapping[str, Any], *, forward=rnn_forward, **hooks: Any) -> list[list[float]]:
    """G_t = (g^z_t)^T h_{t-1} of the student's perturbed microscope, from the reference ledger."""
    v = _mic_variant(numbers)
    Z, Hs = forward(v["X"], v["W_x"], v["W_h"], v["b_h"])
    ledger = bptt_ledger(Z, Hs, v["W_h"], final_state_signal(Hs, v["y"]), **hooks)
    return ledger.G[v["t"]].tolist()


def g_matrix_wrong_forms(numbers: Mapping[str, Any]) -> list[WrongForm]:
    return slipped(
        g_matrix,
        numbers,
        (
            {"outer": _outer_transposed},
            "bptt-outer-product-transposed",
            "this is h_{t-1}^T g^z_t, the transpose of G_t: rows of G_t index the receiving "
            "units (g^z_t), columns the previous-state coordinates (h_{t-1}).",
        ),
        (
            {"activation_derivative": _one_minus_z2},
            "bptt-derivative-of-preactivation",
            "this uses 1 - z_t^2 as tanh's derivative; it is 1 - h_t^2 with h_t = tanh(z_t).",
        ),
        (
            {"activation_derivative": _one_minus_tanh_h2},
            "bptt-tanh-derivative-of-state",
            "this uses 1 - tanh(h_t)^2, tanh applied twice; the factor is 1 - h_t^2.",
        ),
        (
            {"activation_derivative": _ones},
            "bptt-missing-tanh-derivative",
            "this skips the factor (1 - h_t^2): g^z_t = g^h_t ⊙ (1 - h_t^2), not g^h_t.",
        ),
        (
            {"forward": forward_weights_transposed},
            "rnn-weights-transposed",
            "the forward pass used h_{t-1} W_h; the row-vector convention is h_{t-1} W_h^T.",
        ),
    )


def clipped_bias(numbers: Mapping[str, Any], *, clip=clip_by_global_norm) -> list[float]:
    c = numbers["clip"]
    grads = {
        "W_h": np.asarray(c["g_W_h"], dtype=np.float64),
        "b_h": np.asarray(c["g_b_h"], dtype=np.float64),
    }
    return np.asarray(clip(grads, float(c["max_norm"]))["b_h"]).tolist()


def path_factors(numbers: Mapping[str, Any]) -> list[float]:
    """|r|^n for r_small and r_large: one path through n transitions with local derivative r.

    The scalar toy case of the slides, as the reference's Jacobian path product: a state of
    width 1 at h = 0 (so 1 - h^2 = 1) and W_h = [[r]].
    """
    n = int(numbers["n"])
    states = np.zeros((n + 1, 1))
    return [
        jacobian_path_norm(states, np.array([[float(numbers[k])]]), n, 0)
        for k in ("r_small", "r_large")
    ]


def perplexity_of(numbers: Mapping[str, Any], base: float = np.e) -> float:
    """exp(CE) (or base^CE for the wrong form) of the student's CE in nats."""
    return float(base ** float(numbers["ce_nats"]))


_CHOICES = ("A", "B", "C", "D")

# a scalar RNN step, z_t = w_h h_prev + w_x x_t + b and h_t = tanh(z_t), as defined names so
# that a derivation of dh_t/dh_prev may write h_t, z_t or what they stand for
BPTT_FACTOR_SYMBOLS = ("w_h", "w_x", "x_t", "b", "h_prev", "z_t", "h_t")
BPTT_FACTOR_DEFINED = ("z_t = w_h h_prev + w_x x_t + b", "h_t = tanh(z_t)")

# Both BPTT questions: autograd banned, and built on the student's forward pass (a forward-pass
# mistake is charged once, in question 1).
BPTT: dict[str, Any] = {"forbidden": NO_AUTOGRAD, "depends_on": ("a2.rnn_forward",)}
_question = reference_builder("a2", FILE)  # every code question (grader/suites/_kit.py)
QUESTIONS = (
    _question(
        rnn_forward,
        "RNN forward pass",
        10,
        forward_cases,
        {
            "rnn-weights-transposed": forward_weights_transposed,
            "rnn-h0-ignored": h0_ignored(rnn_forward),
            "rnn-bias-counted-twice": forward_bias_twice,
        },
        output_names=("Z", "Hs"),
    ),
    _question(
        bptt_final_state,
        "BPTT for a final-state loss",
        18,
        final_state_cases,
        _bptt_mutants(bptt_final_state, ce=False),
        **BPTT,
    ),
    _question(
        bptt_sequence_ce,
        "BPTT for the mean per-position cross-entropy",
        22,
        sequence_ce_cases,
        _bptt_mutants(bptt_sequence_ce, ce=True),
        output_names=("loss", "grads"),
        **BPTT,
    ),
    _question(
        clip_by_global_norm,
        "Gradient clipping by the global norm",
        10,
        clip_cases,
        {
            "clip-per-tensor": clip_per_tensor,
            "clip-always-rescales": clip_always_rescales,
            "clip-by-value": clip_by_value,
        },
        forbidden=("torch.nn.utils.clip_grad_norm_",),
    ),
    _question(
        sequence_perplexity,
        "Cross-entropy and perplexity",
        10,
        perplexity_cases,
        {
            "ce-sum-not-mean": perplexity_of_summed_ce,
            "perplexity-base-2": perplexity_base_2,
            "ce-in-bits": perplexity_in_bits,
            "ce-in-log10": perplexity_in_log10,
        },
        output_names=("ce_nats", "perplexity"),
    ),
    written(
        "a2.w_tanh_derivative",
        "tanh's derivative in terms of h",
        2,
        "tanh_derivative",
        "expression",
        lambda v: "1 - h^2",
        lambda v: [
            WrongForm(
                "1 - z^2",
                "bptt-derivative-of-preactivation",
                "1 - z^2 squares the preactivation; tanh'(z) = 1 - tanh(z)^2 = 1 - h^2.",
            ),
            WrongForm(
                "1",
                "bptt-missing-tanh-derivative",
                "tanh is not the identity: its local derivative is 1 - h^2, at most 1.",
            ),
            WrongForm(
                "1 - h",
                "bptt-tanh-prime-one-minus-tanh",
                "1 - tanh(z) is not the derivative of tanh (differentiate sinh/cosh to check).",
            ),
        ],
        symbols=("h", "z"),
        relations=("h = tanh(z)",),
    ),
    written(
        "a2.w_bptt_factor",
        "Derive the BPTT factor ∂h_t/∂h_{t-1}",
        3,
        "bptt_factor",
        "expression",
        lambda v: "w_h (1 - h_t^2)",
        lambda v: [
            WrongForm(
                "w_h (1 - h_t)",
                "bptt-tanh-prime-one-minus-tanh",
                "1 - tanh(z) is not the derivative of tanh (differentiate sinh/cosh to check).",
            ),
            WrongForm(
                "w_h h_t (1 - h_t)",
                "bptt-tanh-prime-sigmoid-form",
                "h (1 - h) is the derivative of the sigmoid, not of tanh.",
            ),
            WrongForm(
                "w_h (1 - z_t^2)",
                "bptt-derivative-of-preactivation",
                "1 - z^2 squares the preactivation, not the state.",
            ),
            WrongForm(
                "1 - h_t^2",
                "bptt-factor-missing-recurrent-weight",
                "the chain rule stops at z_t here, but h_prev enters z_t through a weight.",
            ),
            WrongForm(
                "w_h",
                "bptt-missing-tanh-derivative",
                "tanh is not the identity: the factor keeps tanh's local derivative.",
            ),
        ],
        symbols=BPTT_FACTOR_SYMBOLS,
        relations=BPTT_FACTOR_DEFINED,
        steps=True,
    ),
    choice(
        "a2.w_bptt_recurrence",
        "The BPTT recurrence",
        4,
        "bptt_recurrence",
        "A",
        (
            "B",
            "bptt-derivative-of-preactivation",
            "B multiplies by 1 - z_t^2; the local derivative of h_t = tanh(z_t) is 1 - h_t^2.",
        ),
        (
            "C",
            "bptt-missing-tanh-derivative",
            "C passes g^h_t straight through W_h, skipping the tanh factor (1 - h_t^2).",
        ),
        (
            "D",
            "rnn-weights-transposed",
            "with z_t = x_t W_x^T + h_{t-1} W_h^T, the row gradient is g^h_{t-1} = g^z_t W_h, "
            "not g^z_t W_h^T.",
        ),
        choices=_CHOICES,
    ),
    written(
        "a2.w_g_matrix",
        "One use of W_h: G_t with your numbers",
        6,
        "g_matrix",
        "array",
        g_matrix,
        g_matrix_wrong_forms,
    ),
    choice(
        "a2.w_g0_zero",
        "Why G_0 is zero",
        3,
        "g0_zero",
        "C",
        (
            "D",
            "bptt-last-use-only",
            "every use of W_h contributes; here G_0 vanishes only because its local input "
            "h_{-1} is zero.",
        ),
        choices=_CHOICES,
    ),
    written(
        "a2.w_perplexity",
        "Perplexity from your CE",
        3,
        "perplexity",
        "number",
        perplexity_of,
        lambda v: [
            WrongForm(
                perplexity_of(v, base=2.0),
                "perplexity-base-2",
                "2^CE treats the CE as bits; the course's CE is in nats, so perplexity = exp(CE).",
            ),
        ],
    ),
    choice("a2.w_teacher_forcing", "Teacher forcing", 3, "teacher_forcing", "B", choices=_CHOICES),
    written(
        "a2.w_clipped_b_h",
        "Clipping with your numbers",
        4,
        "clipped_b_h",
        "array",
        clipped_bias,
        lambda v: [
            WrongForm(
                clipped_bias(v, clip=clip_per_tensor),
                "clip-per-tensor",
                "b_h's own norm is below c, but clipping uses one norm over all the arrays "
                "together, so b_h is rescaled too.",
            ),
        ],
    ),
    written(
        "a2.w_path_factors",
        "Vanishing and exploding: |r|^n",
        2,
        "path_factors",
        "array",
        path_factors,
        tolerance=Tolerance(rtol=5e-3, atol=0.0),
    ),
)

ASSIGNMENT = Assignment("a2_rnn_bptt", "a2: RNNs and backpropagation through time", FILE, QUESTIONS)
