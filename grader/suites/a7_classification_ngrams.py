"""a7 — Text classification and n-gram language models: the hidden suite.

Code questions compare with reference/classify.py. Hidden cases are built so that every
mistake shows: rows of very different lengths and n != m (cosine with one norm, or none),
logits shifted by 1000 (softmax without the max shift overflows), batches of B >= 2 (the 1/B
of the gradient), padded sentences whose padding holds ordinary token ids (averaging the
padding moves the vector), a token repeated inside a sentence (its embedding row gets two
contributions), bigram and trigram models with k != 1 (k·V) and contexts that were seen
(the denominator without k·V stays finite). `ngram_counts` returns a dict whose keys are the
n-grams themselves, so it has its own judge (`judge_ngram_counts`): a missing or an extra
n-gram is wrong, and a mistake is named when its counts are the student's.

Every case list ends with the edges of its arguments' domains (DOMAINS says them), drawn after
the other cases from a stream of their own, so that every earlier case stays what it was:
one row against several (an output squeezed to 1-D), a batch of one, a sentence with a single
real token, one-word and empty sentences, contexts never seen (c(context) = 0), test words
the counts never saw, and test sentences of very different lengths.

It stays one file (about 910 lines): each section (cosine, cross-entropy, the DAN, n-grams,
written) holds a function's mistakes beside the cases built to
separate them; the written questions are the first section to move out if it grows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from grader.mutants import NONFINITE, AnyOf, any_form
from grader.questions import Assignment, Case, Judgement, WrittenQuestion, WrongForm
from grader.suites._kit import choice, reference_builder, shown, written
from reference import classify as cl

CODE_FILE = "classify.py"
Array = np.ndarray
# The gradients are derived by hand: autograd costs the questions that return them.
NO_AUTOGRAD = ("torch.Tensor.backward", "torch.autograd.*", "torch.func.*")
# The cosine is written out: the library routines that compute it cost that question.
COSINE_SHORTCUTS = (
    "torch.nn.functional.cosine_similarity",
    "torch.cosine_similarity",
    "torch.nn.CosineSimilarity",
    "sklearn.metrics.pairwise.cosine_similarity",
    "scipy.spatial.distance.cosine",
    "scipy.spatial.distance.cdist",
)

# The README's toy corpus (worked examples of the visible cases).
TOY_CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]]
TOY_V = 7  # the, cat, sat, dog, a, ran and "</s>"
_WORDS = ("the", "a", "cat", "dog", "bird", "sat", "ran", "slept", "here", "there", "now")
UNKNOWN = "zebra"  # never in a training corpus (_WORDS): a word the counts never saw


def _rng(salt: int, seed: int) -> np.random.Generator:
    return np.random.default_rng([salt, seed])


def _edge_rng(salt: int, seed: int) -> np.random.Generator:
    """The domain edges' own stream: drawing them leaves every earlier case as it was."""
    return np.random.default_rng([salt, seed, 33])


# The domain of every graded function's arguments, as the handout defines it; each list of
# cases ends with cases at these edges (the "domain edge" cases).
DOMAINS: dict[str, dict[str, str]] = {
    "cosine_similarity": {
        "A": "(n, d) with n >= 1 (one row included), or a 1-D vector with B; no zero row",
        "B": "(m, d) with m >= 1 (one row included), or a 1-D vector with A; no zero row",
        "A, B lengths": "any (the cosine ignores them): rows and vectors 0.2 to 6 long, two "
        "vectors five times apart included",
    },
    "softmax_cross_entropy": {
        "logits": "(C,) or (B, C), B >= 1 (a batch of one included), any size (±1000)",
        "y": "an int with (C,) logits, (B,) ints with (B, C); any class, 0 and C − 1 included",
    },
    "dan_forward": {
        "token_ids": "(B, T) ints in [0, V), B >= 1; padded positions hold ordinary ids",
        "mask": "(B, T) bool, every row at least one True (a single real token included)",
        "params": "E (V, d), W1 (h, d), b1 (h,), W2 (C, h), b2 (C,)",
    },
    "dan_backward": {
        "token_ids, mask, params": "as dan_forward's",
        "y": "(B,) ints in [0, C)",
    },
    "ngram_counts": {
        "corpus": "sentences of words, a one-word sentence and an empty one included",
        "n": "2 or 3",
    },
    "ngram_prob": {
        "context": "n − 1 words, seen or never seen (c(context) = 0 gives k / (k·V) = 1/V)",
        "word": "a seen or an unseen word after the context, or a word the counts never saw",
        "k": "k > 0",
    },
    "ngram_perplexity": {
        "sentences": "one or more test sentences of any length >= 1, words the counts never "
        "saw included (predicted with add-k like any word)",
        "n, k": "n in {2, 3}, k > 0",
    },
}


# --------------------------------------------------------------------------- cosine


def _rows(rng: np.random.Generator, n: int, d: int) -> Array:
    """Rows of very different lengths (0.2 to 5): a missing norm changes the ranking."""
    X = rng.normal(size=(n, d))  # (n, d)
    return X * rng.uniform(0.2, 5.0, size=(n, 1))


def _cosine_cases(seed: int) -> list[Case]:
    rng = _rng(701, seed)
    cases = [
        Case(
            "worked example: two rows against three (README)",
            (np.array([[1.0, 2.0, 2.0], [3.0, 0.0, 4.0]]), np.eye(3)),
            visible=True,
        ),
        Case(
            "worked example: two vectors",
            (np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 0.0])),
            visible=True,
        ),
    ]
    for i, (n, m, d) in enumerate(((4, 3, 5), (3, 6, 4), (5, 2, 8))):
        cases.append(
            Case(
                f"hidden case {i + 1}: A ({n}, {d}), B ({m}, {d})",
                (_rows(rng, n, d), _rows(rng, m, d)),
            )
        )
    a, b = _rows(rng, 2, 6)
    cases.append(Case("hidden case 4: two 1-D vectors of length 6", (a, b)))
    edge = _edge_rng(701, seed)
    cases += [
        Case(
            "domain edge: one row A (1, 5) against B (4, 5)", (_rows(edge, 1, 5), _rows(edge, 4, 5))
        ),
        Case(
            "domain edge: A (3, 4) against one row B (1, 4)", (_rows(edge, 3, 4), _rows(edge, 1, 4))
        ),
        Case("domain edge: two 1-D vectors, one five times as long", _lengths_apart(edge, 6)),
    ]
    return cases


def _lengths_apart(rng: np.random.Generator, d: int) -> tuple[Array, Array]:
    """Two random directions of lengths 6 and 1.2: the cosine ignores the lengths, while any
    mix-up of the two norms (one of them, their quotient) shows as a factor far from 1."""
    a, b = rng.normal(size=(2, d))  # (d,) each
    return a * (6.0 / np.linalg.norm(a)), b * (1.2 / np.linalg.norm(b))


def _only_norm(which: int) -> Callable[[Array, Array], Array]:
    def divide(norm_a: Array, norm_b: Array) -> Array:
        kept = norm_a[:, None] if which == 0 else norm_b[None, :]
        return np.broadcast_to(kept, (len(norm_a), len(norm_b)))

    return divide


def _no_norm(norm_a: Array, norm_b: Array) -> Array:
    return np.ones((len(norm_a), len(norm_b)))


COSINE_MUTANTS: dict[str, Callable[..., Any]] = {
    "cosine-missing-norm": any_form(
        partial(cl.cosine_similarity, divide_by=_only_norm(0)),
        partial(cl.cosine_similarity, divide_by=_only_norm(1)),
    ),
    "cosine-is-dot-product": partial(cl.cosine_similarity, divide_by=_no_norm),
}


# --------------------------------------------------------------------------- cross-entropy


def _ce_cases(seed: int) -> list[Case]:
    rng = _rng(702, seed)
    cases = [
        Case(
            "worked example: logits [2, 1, 0.1], y = 0 (README)",
            (np.array([2.0, 1.0, 0.1]), 0),
            visible=True,
        ),
        Case(
            "worked example: a batch of two",
            (np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), np.array([2, 0])),
            visible=True,
        ),
    ]
    for i, (B, C) in enumerate(((4, 5), (3, 3))):
        z = rng.normal(0.0, 2.0, size=(B, C))
        cases.append(
            Case(f"hidden case {i + 1}: a batch, B = {B}, C = {C}", (z, rng.integers(0, C, size=B)))
        )
    C = 6
    cases.append(
        Case(
            f"hidden case 3: one example, C = {C}",
            (rng.normal(0.0, 2.0, size=C), int(rng.integers(C))),
        )
    )
    z = 1000.0 + rng.normal(0.0, 3.0, size=(3, 4))  # every exp(z) overflows unless shifted
    cases.append(
        Case(
            "hidden case 4: large logits (about 1000), B = 3, C = 4",
            (z, rng.integers(0, 4, size=3)),
        )
    )
    # spread 10 around 800: exp overflows unless shifted, and log p_y stays far from underflow
    z = 800.0 + rng.normal(0.0, 10.0, size=5)
    cases.append(Case("hidden case 5: one example, logits about 800", (z, int(rng.integers(5)))))
    # rows far apart: one shift for the whole batch (or by the minimum) still overflows or
    # underflows a row; each row's own maximum keeps every row finite
    z = rng.normal(0.0, 3.0, size=(3, 4)) + np.array([[1000.0], [-1000.0], [0.0]])
    cases.append(
        Case(
            "hidden case 6: rows about 1000, -1000 and 0, B = 3, C = 4",
            (z, rng.integers(0, 4, size=3)),
        )
    )
    z = rng.normal(0.0, 300.0, size=6)
    z += 1000.0 - z.max()  # a wide spread from -1000 to 1000; the true class is the largest
    z[int(np.argmin(z))] = -1000.0
    cases.append(
        Case("hidden case 7: one example, logits spread over ±1000", (z, int(np.argmax(z))))
    )
    edge = _edge_rng(702, seed)
    cases.append(
        Case(
            "domain edge: a batch of one, logits (1, 5), y (1,)",
            (edge.normal(0.0, 2.0, size=(1, 5)), edge.integers(0, 5, size=1)),
        )
    )
    return cases


def _ce_unstable(logits: Any, y: Any) -> Any:
    """softmax-unstable: exp of the raw logits. Where it overflows, the loss is inf or NaN unless
    it was taken with a log-sum-exp of its own, and the gradient either holds NaN (p as
    exp(z) / Σ exp(z)) or is −e_y / B (p as exp(z − log Σ exp(z)) = exp(−inf) = 0)."""
    with np.errstate(all="ignore"):
        loss, grad = cl.softmax_cross_entropy(logits, y, stable=False)
        if np.isfinite(loss) and np.all(np.isfinite(grad)):
            return loss, grad
        Z = np.atleast_2d(np.asarray(logits, dtype=np.float64))  # (B, C)
        Y = np.atleast_1d(np.asarray(y, dtype=np.int64))  # (B,)
        p = np.exp(
            Z - np.log(np.exp(Z).sum(axis=-1, keepdims=True))
        )  # (B, C): 0 where it overflowed
        zeros = cl.probs_minus_onehot(p, Y) / len(Y)  # (B, C)
    right = cl.softmax_cross_entropy(logits, y)[0]
    zeros = zeros[0] if np.ndim(logits) == 1 else zeros
    return AnyOf((NONFINITE, NONFINITE), (right, NONFINITE), (NONFINITE, zeros))


def _ascent(p: Array, y: Array) -> Array:
    return -cl.probs_minus_onehot(p, y)  # e_y − p


CE_MUTANTS: dict[str, Callable[..., Any]] = {
    "softmax-unstable": _ce_unstable,
    "ce-grad-sign": partial(cl.softmax_cross_entropy, error=_ascent),
    "ce-grad-not-averaged": partial(cl.softmax_cross_entropy, batch_mean_grad=False),
    # torch's reduction="sum": the loss summed and its gradient without the 1/B
    "ce-batch-summed": partial(cl.softmax_cross_entropy, reduce_loss=np.sum, batch_mean_grad=False),
}


# --------------------------------------------------------------------------- DAN

# The README's worked example: V = 4 words, d = 2, h = 2, C = 2; two sentences, one padded.
DAN_EXAMPLE = {
    "E": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]]),
    "W1": np.array([[1.0, -1.0], [0.5, 0.5]]),
    "b1": np.array([0.0, 0.1]),
    "W2": np.array([[1.0, 2.0], [-1.0, 1.0]]),
    "b2": np.array([0.0, 0.5]),
}
DAN_IDS = np.array([[0, 2, 2], [3, 1, 0]])
DAN_MASK = np.array([[True, True, True], [True, True, False]])


def _dan_problem(
    rng: np.random.Generator, B: int, T: int, V: int, d: int, h: int, C: int
) -> tuple[Array, Array, dict[str, Array]]:
    """ids with a repeated token in each sentence and padding that holds ordinary ids."""
    lengths = rng.integers(2, T, size=B)  # (B,) every row padded...
    lengths[int(rng.integers(B))] = T  # ...but one
    ids = rng.integers(0, V, size=(B, T))  # (B, T) padding positions hold real ids too
    for b in range(B):
        i, j = rng.choice(int(lengths[b]), size=2, replace=False)
        ids[b, j] = ids[b, i]  # a token repeated inside the sentence
    mask = np.arange(T)[None, :] < lengths[:, None]  # (B, T)
    params = {
        "E": rng.normal(size=(V, d)),
        "W1": rng.normal(size=(h, d)),
        "b1": rng.normal(0.0, 0.5, size=h),
        "W2": rng.normal(size=(C, h)),
        "b2": rng.normal(0.0, 0.5, size=C),
    }
    return ids, mask, params


DAN_SIZES = ((3, 5, 8, 4, 6, 3), (4, 6, 10, 3, 5, 4), (2, 7, 6, 5, 4, 2))


def _dan_forward_cases(seed: int) -> list[Case]:
    rng = _rng(703, seed)
    cases = shown("worked example (README)", DAN_IDS, DAN_MASK, DAN_EXAMPLE)
    for i, (B, T, V, d, h, C) in enumerate(DAN_SIZES):
        ids, mask, params = _dan_problem(rng, B, T, V, d, h, C)
        cases.append(
            Case(
                f"hidden case {i + 1}: B = {B}, T = {T}, V = {V}, d = {d}, h = {h}, C = {C}",
                (ids, mask, params),
            )
        )
    ids, mask, params = _dan_problem(rng, 3, 5, 8, 4, 6, 3)
    params = {**params, "W2": 1000.0 * params["W2"]}  # rows and classes thousands apart
    logits = cl._dan_parts(ids, mask, params, cl.mean_of_real)["logits"]  # (B, C)
    params["b2"] = params["b2"] + (1000.0 - logits.max())  # the largest logit is 1000
    cases.append(
        Case("hidden case 4: large output weights (logits thousands apart)", (ids, mask, params))
    )
    cases.append(
        Case("domain edge: a batch of one sentence with one real token", _dan_edge(seed)[:3])
    )
    return cases


def _dan_edge(seed: int) -> tuple[Array, Array, dict[str, Array], Array]:
    """A batch of one (B = 1) whose sentence has a single real token, its padding other ids."""
    edge = _edge_rng(703, seed)
    ids, _, params = _dan_problem(edge, 2, 5, 8, 4, 6, 3)
    ids, mask = ids[:1], np.array([[True, False, False, False, False]])  # (1, 5)
    return ids, mask, params, edge.integers(0, 3, size=1)


def _dan_backward_cases(seed: int) -> list[Case]:
    rng = _rng(704, seed)
    cases = shown(
        "worked example (README), y = [1, 0]", DAN_IDS, DAN_MASK, DAN_EXAMPLE, np.array([1, 0])
    )
    for i, (B, T, V, d, h, C) in enumerate(DAN_SIZES):
        ids, mask, params = _dan_problem(rng, B, T, V, d, h, C)
        y = rng.integers(0, C, size=B)
        cases.append(
            Case(
                f"hidden case {i + 1}: B = {B}, T = {T}, V = {V}, d = {d}, h = {h}, C = {C}",
                (ids, mask, params, y),
            )
        )
    cases.append(Case("domain edge: a batch of one sentence with one real token", _dan_edge(seed)))
    return cases


def _real_sum_over_T(X: Array, mask: Array) -> Array:
    return (X * mask[..., None]).sum(axis=1) / X.shape[1]  # (B, d)


def _all_sum_over_real(X: Array, mask: Array) -> Array:
    return X.sum(axis=1) / mask.sum(axis=1, keepdims=True)  # (B, d)


# Averaging the padding in, in its natural forms: the mean over all T rows, the real rows
# summed but divided by T, or every row summed and divided by the real length.
PADDED_AVERAGES = (cl.mean_of_all, _real_sum_over_T, _all_sum_over_real)


def _buffered(target: Array, ids: Array, rows: Array, keep: Array) -> None:
    """gE[ids] += rows over the whole batch: numpy keeps one write per distinct id."""
    target[ids[keep]] += rows[keep]


def _buffered_per_sentence(target: Array, ids: Array, rows: Array, keep: Array) -> None:
    """gE[ids_b] += rows_b sentence by sentence: a repeat inside one sentence adds once."""
    for b in range(ids.shape[0]):
        target[ids[b][keep[b]]] += rows[b][keep[b]]


def _summed_batch(token_ids, mask, params, y):
    """ce-batch-summed lifted to the DAN: the loss and every gradient B times the mean's."""
    loss, grads = cl.dan_backward(token_ids, mask, params, y)
    B = float(np.shape(token_ids)[0])
    return B * loss, {k: B * g for k, g in grads.items()}


def _scaled(fn: Callable[..., tuple[float, dict]], factor: Callable[[Any], float]):
    def mutant(token_ids, mask, params, y):
        loss, grads = fn(token_ids, mask, params, y)
        f = factor(token_ids)
        return loss, {k: f * g for k, g in grads.items()}

    return mutant


def _dan_forward_unstable(token_ids, mask, params) -> Any:
    """softmax-unstable in the DAN's softmax: NaN or inf wherever exp of a raw logit overflows."""
    with np.errstate(all="ignore"):
        logits = cl._dan_parts(token_ids, mask, params, cl.mean_of_real)["logits"]  # (B, C)
        probs = cl._raw_softmax(logits)
    return probs if np.all(np.isfinite(probs)) else NONFINITE


DAN_FORWARD_MUTANTS: dict[str, Callable[..., Any]] = {
    "dan-average-includes-padding": any_form(
        *(partial(cl.dan_forward, average=avg) for avg in PADDED_AVERAGES)
    ),
    "softmax-unstable": _dan_forward_unstable,
}

DAN_BACKWARD_MUTANTS: dict[str, Callable[..., Any]] = {
    # the forward pass's mistake, lifted to the backward pass (follow-through)
    "dan-average-includes-padding": any_form(
        *(partial(cl.dan_backward, average=avg) for avg in PADDED_AVERAGES)
    ),
    "dan-repeated-token-once": any_form(
        partial(cl.dan_backward, scatter=_buffered),
        partial(cl.dan_backward, scatter=_buffered_per_sentence),
    ),
    "ce-grad-sign": _scaled(cl.dan_backward, lambda ids: -1.0),
    "ce-grad-not-averaged": _scaled(cl.dan_backward, lambda ids: float(np.shape(ids)[0])),
    "ce-batch-summed": _summed_batch,
    "dan-relu-grad-missing": partial(cl.dan_backward, relu_gate=False),
}


# --------------------------------------------------------------------------- n-grams


def _corpus(rng: np.random.Generator, n_sentences: int) -> list[list[str]]:
    words = list(_WORDS[: int(rng.integers(6, len(_WORDS) + 1))])
    return [
        [str(w) for w in rng.choice(words, size=int(rng.integers(2, 6)))]
        for _ in range(n_sentences)
    ]


def _vocab_size(corpus: Sequence[Sequence[str]]) -> int:
    """The word types plus "</s>" (never "<s>")."""
    return len({w for s in corpus for w in s}) + 1


def _counts_cases(seed: int) -> list[Case]:
    rng = _rng(705, seed)
    cases = [
        Case("the README's toy corpus, bigrams", (TOY_CORPUS, 2), visible=True),
        Case("the README's toy corpus, trigrams", (TOY_CORPUS, 3), visible=True),
    ]
    for i, n in enumerate((2, 3, 2, 3)):
        corpus = _corpus(rng, int(rng.integers(3, 7)))
        cases.append(Case(f"hidden corpus {i + 1}: {len(corpus)} sentences, n = {n}", (corpus, n)))
    edge = _edge_rng(705, seed)
    for n in (2, 3):
        corpus = _corpus(edge, 3)
        corpus.insert(int(edge.integers(len(corpus) + 1)), [str(edge.choice(_WORDS))])
        corpus.insert(int(edge.integers(len(corpus) + 1)), [])
        name = f"domain edge: a one-word and an empty sentence among {len(corpus)}, n = {n}"
        cases.append(Case(name, (corpus, n)))
    return cases


def _counts_start_pads(corpus: Sequence[Sequence[str]], n: int) -> AnyOf:
    """ngram-missing-start-padding: no "<s>" at all, or a single one whatever n is (right for
    bigrams, short for trigrams)."""
    return AnyOf(*(cl.ngram_counts(corpus, n, start_pad=p) for p in (0, 1)))


def _counts_end_pads(corpus: Sequence[Sequence[str]], n: int) -> dict:
    """ngram-end-padded-n-minus-1: nltk.lm's pad_both_ends, n − 1 "</s>" at the end."""
    return cl.ngram_counts(corpus, n, end_pad=n - 1)


def _counts_no_end_pad(corpus: Sequence[Sequence[str]], n: int) -> dict:
    """ngram-missing-end-padding: the "<s>" in front, no "</s>" at the end."""
    return cl.ngram_counts(corpus, n, end_pad=0)


COUNTS_MUTANTS: dict[str, Callable[..., Any]] = {
    "ngram-missing-start-padding": _counts_start_pads,
    "ngram-end-padded-n-minus-1": _counts_end_pads,
    "ngram-missing-end-padding": _counts_no_end_pad,
}


def _read_counts(got: Any, n: int) -> tuple[dict | None, str]:
    """The student's counts as {n-gram tuple: number}, or None and why they cannot be read."""
    if not isinstance(got, dict):
        return None, f"expected a dict from n-grams to counts, got a {type(got).__name__}"
    out = {}
    for key, value in got.items():
        if not (isinstance(key, tuple) and all(isinstance(w, str) for w in key)):
            return None, 'every key should be a tuple of words, such as ("<s>", "the")'
        if len(key) != n:
            return None, f"every key should be a tuple of n = {n} words"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, "every count should be a number"
        out[key] = value
    return out, ""


def _same_counts(a: Mapping, b: Mapping) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a)


def _visible_detail(counts: Mapping, want: Mapping) -> str:
    """What differs, for a visible case only (its inputs and expected counts are shown anyway)."""
    missing = sorted(set(want) - set(counts))[:3]
    extra = sorted(set(counts) - set(want))[:3]
    wrong = sorted(k for k in want if k in counts and counts[k] != want[k])[:3]
    parts = (
        f"missing {missing}" if missing else "",
        f"not expected {extra}" if extra else "",
        f"wrong counts for {wrong}" if wrong else "",
    )
    return "; ".join(p for p in parts if p)


def judge_ngram_counts(cases: Sequence[Case], outputs: Sequence[Any]) -> Judgement:
    """Every case's counts exactly the reference's (no n-gram missing, none extra).

    A mistake is named as the engine names one: its counts are the student's on at least half
    of the wrong cases, and on every case where its counts differ from the right ones the
    student's are its counts (a case where the student is right, or wrong in another way, rules
    it out).
    """
    j = Judgement(how="the counts compared exactly, no n-gram missing or extra")
    fits: dict[str, int] = dict.fromkeys(COUNTS_MUTANTS, 0)
    ruled_out: set[str] = set()
    n_wrong = 0
    for case, got in zip(cases, outputs):
        if got is None:
            continue  # the engine reports the failed call
        corpus, n = case.args
        want = cl.ngram_counts(corpus, n)
        counts, why = _read_counts(got, n)
        ok = counts is not None and _same_counts(counts, want)
        detail = why or (_visible_detail(counts, want) if case.visible else "the counts differ")
        j.checks.append((case.name, ok, detail))
        n_wrong += not ok
        for mid, mutant in COUNTS_MUTANTS.items():
            predicted = mutant(corpus, n)
            options = predicted.options if isinstance(predicted, AnyOf) else (predicted,)
            matched = counts is not None and any(_same_counts(counts, o) for o in options)
            shows = any(not _same_counts(o, want) for o in options)
            if shows and not matched:
                ruled_out.add(mid)
            elif matched and not ok:
                fits[mid] += 1
    for mid, count in fits.items():
        if mid not in ruled_out and count and count * 2 >= n_wrong:
            j.misconceptions.append(mid)
            break
    return j


def _prob_problem(rng: np.random.Generator, n: int) -> tuple[list[list[str]], dict, int]:
    corpus = _corpus(rng, int(rng.integers(4, 8)))
    return corpus, cl.ngram_counts(corpus, n), _vocab_size(corpus)


def _prob_cases(seed: int) -> list[Case]:
    rng = _rng(706, seed)
    toy = cl.ngram_counts(TOY_CORPUS, 2)
    cases = shown('the toy corpus: P("cat" | "the"), Laplace', toy, TOY_V, ("the",), "cat")
    for i, (n, k, seen) in enumerate(
        ((2, 1.0, True), (2, 0.5, False), (3, 1.0, True), (3, 0.1, True), (2, 2.0, True))
    ):
        corpus, counts, V = _prob_problem(rng, n)
        grams = sorted(counts)
        gram = grams[int(rng.integers(len(grams)))]
        context = gram[:-1]
        word = gram[-1]
        if not seen:  # a word never seen after this context (the context itself was seen)
            after = {g[-1] for g in counts if g[:-1] == context}
            unseen = sorted(({w for s in corpus for w in s} | {cl.EOS}) - after)
            word = unseen[int(rng.integers(len(unseen)))] if unseen else word
        what = "an unseen" if word != gram[-1] else "a seen"
        name = f"hidden case {i + 1}: n = {n}, k = {k}, {what} n-gram after a seen context"
        cases.append(Case(name, (counts, V, context, word), {"k": k}))
    edge = _edge_rng(706, seed)
    for n, k in ((2, 1.0), (3, 0.5)):
        corpus, counts, V = _prob_problem(edge, n)
        words = sorted({w for s in corpus for w in s})
        seen = {g[:-1] for g in counts}
        unseen = [c for c in itertools.product([*words, UNKNOWN], repeat=n - 1) if c not in seen]
        context = unseen[int(edge.integers(len(unseen)))]
        word = str(edge.choice([*words, UNKNOWN]))
        name = f"domain edge: n = {n}, k = {k}, a context never seen (c(context) = 0)"
        cases.append(Case(name, (counts, V, context, word), {"k": k}))
    corpus, counts, V = _prob_problem(edge, 2)
    context = (str(edge.choice(sorted({w for s in corpus for w in s}))),)
    cases.append(
        Case(
            "domain edge: n = 2, k = 1.0, a word the counts never saw",
            (counts, V, context, UNKNOWN),
        )
    )
    return cases


def _context_count_only(c_context: float, k: float, vocab_size: int) -> float:
    """addk-missing-v's denominator, c(context): a context never seen divides by zero, which
    a student's code raises on (Python floats) or turns into inf (NumPy's): no value to compare,
    so the mistake does not apply to that case (grader/mutants.py, NOT_APPLICABLE)."""
    if c_context == 0:
        raise ZeroDivisionError("c(context) = 0 with no k·V")
    return c_context


PROB_MUTANTS: dict[str, Callable[..., Any]] = {
    "addk-missing-v": partial(cl.ngram_prob, denominator=_context_count_only),
}


def _seen_contexts_only(
    rng: np.random.Generator, corpus: list[list[str]], counts: Mapping, n: int, want: int
) -> list[list[str]]:
    """Test sentences whose every context was seen in training (new n-grams, finite mistakes)."""
    contexts = {g[:-1] for g in counts}
    words = sorted({w for s in corpus for w in s})
    out: list[list[str]] = []
    for _ in range(200):
        s = [str(w) for w in rng.choice(words, size=int(rng.integers(2, 5)))]
        if s not in corpus and all(ctx in contexts for ctx, _ in cl.predictions(s, n)):
            out.append(s)
        if len(out) == want:
            return out
    return out + corpus[: want - len(out)]


def _perplexity_cases(seed: int) -> list[Case]:
    rng = _rng(707, seed)
    toy = cl.ngram_counts(TOY_CORPUS, 2)
    cases = shown('the toy corpus: "the cat", bigrams, Laplace', toy, TOY_V, [["the", "cat"]], 2)
    for i, (n, k) in enumerate(((2, 1.0), (3, 1.0), (2, 0.5), (3, 0.1))):
        corpus, counts, V = _prob_problem(rng, n)
        test = _seen_contexts_only(rng, corpus, counts, n, 2)
        name = f"hidden case {i + 1}: n = {n}, k = {k}, {len(test)} test sentences"
        cases.append(Case(name, (counts, V, test, n), {"k": k}))
    edge = _edge_rng(707, seed)
    for n, k in ((2, 1.0), (3, 0.5)):
        corpus, counts, V = _prob_problem(edge, n)
        first, second, third = (corpus[int(i)] for i in edge.choice(len(corpus), 3, replace=False))
        short = [first[0]]  # a word that starts a training sentence: its first context was seen
        long = (list(second) + list(third) + list(first))[:8]  # training sentences run together
        test = [short, long]  # one word and five or more: lengths far apart
        name = f"domain edge: n = {n}, k = {k}, test sentences of 1 and {len(long)} words"
        cases.append(Case(name, (counts, V, test, n), {"k": k}))
        unknown = list(test[1])
        unknown.insert(int(edge.integers(1, len(unknown))), UNKNOWN)
        name = f"domain edge: n = {n}, k = {k}, a test word the counts never saw"
        cases.append(Case(name, (counts, V, [unknown], n), {"k": k}))
    return cases


def _ppl(**hooks: Any) -> Callable[..., float]:
    return partial(cl.ngram_perplexity, **hooks)


def _ppl_start_pads(counts, vocab_size, sentences, n, k=1.0) -> AnyOf:
    """ngram-missing-start-padding: the test sentences padded with no "<s>", or a single one
    whatever n is."""
    return AnyOf(
        *(cl.ngram_perplexity(counts, vocab_size, sentences, n, k, start_pad=p) for p in (0, 1))
    )


PERPLEXITY_MUTANTS: dict[str, Callable[..., Any]] = {
    # ngram_prob's mistake, lifted to the perplexity built on it (follow-through)
    "addk-missing-v": _ppl(prob=PROB_MUTANTS["addk-missing-v"]),
    "perplexity-base-2": _ppl(exponentiate=lambda H: 2.0**H),
    # the log-probabilities taken in bits (log2), then exponentiated with e (2^H was right)
    "ce-in-bits": _ppl(exponentiate=lambda H: np.exp(H / np.log(2.0))),
    "perplexity-missing-end-token": _ppl(predict_end=False),
    "ngram-missing-start-padding": _ppl_start_pads,
    # the conventions of nltk.lm, Hugging Face evaluate, SRILM and KenLM the handout excludes
    # (partials of the reference, so that two of them in one file are named together)
    "ngram-end-padded-n-minus-1": _ppl(end_pad=cl.nltk_end_pad),
    # the mean of the sentences' own perplexities (one form only, a partial: it combines)
    "perplexity-averaged-per-sentence": _ppl(per_sentence=True),
    "perplexity-n-excludes-end": _ppl(count_end=False),
    "perplexity-skips-unknown-words": _ppl(skip_unknown=True),
}


# --------------------------------------------------------------------------- written questions


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(cl.cosine_similarity(np.asarray(a, float), np.asarray(b, float)))


def _cosine_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    q, u = np.asarray(numbers["query"], float), np.asarray(numbers["candidate_A"], float)
    return [
        WrongForm(
            float(q @ u),
            "cosine-is-dot-product",
            "this is the dot product q·A; the cosine divides it by both lengths.",
        ),
        WrongForm(
            float(q @ u / np.linalg.norm(u)),
            "cosine-missing-norm",
            "this divides q·A by ‖A‖ only; the cosine divides by ‖q‖ too.",
        ),
        WrongForm(
            float(q @ u / np.linalg.norm(q)),
            "cosine-missing-norm",
            "this divides q·A by ‖q‖ only; the cosine divides by ‖A‖ too.",
        ),
    ]


def _nearest(numbers: Mapping[str, Any], score: Callable[[Array, Array], float]) -> str:
    q = np.asarray(numbers["query"], float)
    a, b = (np.asarray(numbers[k], float) for k in ("candidate_A", "candidate_B"))
    return "A" if score(q, a) > score(q, b) else "B"


def _by_dot(numbers: Mapping[str, Any]) -> str:
    return _nearest(numbers, lambda q, x: float(q @ x))


def _by_cosine(numbers: Mapping[str, Any]) -> str:
    return _nearest(numbers, _cos)


def _ce_gradient(numbers: Mapping[str, Any]) -> list[float]:
    _, g = cl.softmax_cross_entropy(np.asarray(numbers["logits"], float), int(numbers["label"]))
    return [float(x) for x in g]


def _ce_gradient_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            [-x for x in _ce_gradient(numbers)],
            "ce-grad-sign",
            "this is e_y − p, the gradient of log p_y; the loss −log p_y has p − e_y.",
        ),
    ]


def _toy(numbers: Mapping[str, Any]) -> tuple[dict, int]:
    corpus = [list(s) for s in numbers["corpus"]]
    return cl.ngram_counts(corpus, 2), _vocab_size(corpus)


def _bigram_prob(numbers: Mapping[str, Any]) -> float:
    counts, V = _toy(numbers)
    return cl.ngram_prob(counts, V, (numbers["bigram"][0],), numbers["bigram"][1])


def _bigram_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    counts, V = _toy(numbers)
    ctx, w = (numbers["bigram"][0],), numbers["bigram"][1]
    return [
        WrongForm(
            PROB_MUTANTS["addk-missing-v"](counts, V, ctx, w),
            "addk-missing-v",
            "the denominator needs + V: every word type (and </s>) got one extra count.",
        ),
    ]


def _sentence_ppl(numbers: Mapping[str, Any], mutant: str | None = None) -> float:
    counts, V = _toy(numbers)
    fn = cl.ngram_perplexity if mutant is None else PERPLEXITY_MUTANTS[mutant]
    out = fn(counts, V, [list(numbers["test_sentence"])], 2)
    return float(out.options[0]) if isinstance(out, AnyOf) else float(out)


def _ppl_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    messages = {
        "perplexity-base-2": "this is 2 raised to the cross-entropy in nats; perplexity is exp of it.",
        "ce-in-bits": "this is e raised to the cross-entropy in bits (log2); the bases must match.",
        "perplexity-missing-end-token": 'this leaves out the prediction of "</s>": N counts it too.',
        "addk-missing-v": "these probabilities were smoothed without + V in the denominator.",
        "ngram-missing-start-padding": 'this leaves out the first word\'s prediction after "<s>".',
        "perplexity-n-excludes-end": 'this divides by the words only: N counts the "</s>" too.',
    }
    want = _sentence_ppl(numbers)
    forms = []
    for mid, message in messages.items():
        value = _sentence_ppl(numbers, mid)
        if np.isfinite(value) and not np.isclose(value, want, rtol=1e-3):
            forms.append(WrongForm(value, mid, message))
    return forms


WRITTEN: tuple[WrittenQuestion, ...] = (
    written(
        "a7.w_cosine_value",
        "The cosine of your query and candidate A",
        4,
        "cosine_query_A",
        "number",
        lambda n: _cos(n["query"], n["candidate_A"]),
        _cosine_wrong,
    ),
    written(
        "a7.w_nearest_by_dot",
        "Your query's nearest candidate by dot product",
        2,
        "nearest_by_dot",
        "choice",
        _by_dot,
        choices=("A", "B"),
    ),
    written(
        "a7.w_nearest_by_cosine",
        "Your query's nearest candidate by cosine",
        3,
        "nearest_by_cosine",
        "choice",
        _by_cosine,
        lambda n: [
            WrongForm(
                _by_dot(n),
                "cosine-is-dot-product",
                "that candidate wins on the dot product, helped by its length; the cosine "
                "compares directions only.",
            )
        ],
        choices=("A", "B"),
    ),
    written(
        "a7.w_ce_gradient",
        "The cross-entropy gradient for your logits",
        5,
        "ce_gradient",
        "array",
        _ce_gradient,
        _ce_gradient_wrong,
    ),
    written(
        "a7.w_bigram_prob",
        "A Laplace bigram probability on your corpus",
        5,
        "bigram_prob",
        "number",
        _bigram_prob,
        _bigram_wrong,
    ),
    written(
        "a7.w_sentence_perplexity",
        "The perplexity of your test sentence",
        6,
        "sentence_perplexity",
        "number",
        _sentence_ppl,
        _ppl_wrong,
    ),
    choice(
        "a7.w_unsmoothed_infinite",
        "Why an unsmoothed model's perplexity can be infinite",
        5,
        "unsmoothed_infinite",
        "C",
    ),
)


# --------------------------------------------------------------------------- the assignment

_question = reference_builder("a7", CODE_FILE)  # every code question (grader/suites/_kit.py)
CODE_QUESTIONS = (
    _question(
        cl.cosine_similarity,
        "Cosine similarity of every row pair",
        8,
        _cosine_cases,
        COSINE_MUTANTS,
        forbidden=COSINE_SHORTCUTS,
    ),
    _question(
        cl.softmax_cross_entropy,
        "Softmax cross-entropy and its gradient",
        10,
        _ce_cases,
        CE_MUTANTS,
        output_names=("loss", "grad"),
        forbidden=NO_AUTOGRAD,
    ),
    _question(
        cl.dan_forward,
        "Deep Averaging Network: forward pass",
        10,
        _dan_forward_cases,
        DAN_FORWARD_MUTANTS,
    ),
    _question(
        cl.dan_backward,
        "Deep Averaging Network: loss and gradients",
        14,
        _dan_backward_cases,
        DAN_BACKWARD_MUTANTS,
        output_names=("loss", "grads"),
        depends_on=("a7.dan_forward",),
        forbidden=NO_AUTOGRAD,
    ),
    _question(
        cl.ngram_counts,
        "N-gram counts with <s> and </s> padding",
        8,
        _counts_cases,
        integer=True,
        # the judge names COUNTS_MUTANTS itself: counts with other n-grams (other keys) are
        # compared whole there, which the engine's key-by-key diagnosis does not do
        custom=judge_ngram_counts,
    ),
    _question(cl.ngram_prob, "Add-k smoothed n-gram probability", 10, _prob_cases, PROB_MUTANTS),
    _question(
        cl.ngram_perplexity,
        "Perplexity of an n-gram model",
        10,
        _perplexity_cases,
        PERPLEXITY_MUTANTS,
        depends_on=("a7.ngram_prob",),
    ),
)

ASSIGNMENT = Assignment(
    "a7_classification_ngrams",
    "a7 — Text classification and n-gram language models",
    CODE_FILE,
    (*CODE_QUESTIONS, *WRITTEN),
)
