"""a7 (text classification and n-grams): full marks for correct files in several styles, zero
for the handout, every catalog mistake named on a student-style edit of the solution.

Expected values come from reference/classify.py, itself held to torch, autograd, finite
differences and nltk.lm (tests/reference/test_ref_classify.py); mistakes are written in code
as a student would write them, not by calling the suite's mutants.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import grader.suites.a7_classification_ngrams as suite
from grader import sandbox
from grader.catalog import _CATALOG, all_ids
from grader.course import variants
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from reference import classify as cl

ROOT = Path(__file__).resolve().parent.parent
HANDOUT = ROOT / "assignments" / "a7_classification_ngrams"
SOLUTION = ROOT / "solutions" / "a7_classification_ngrams"
A7 = suite.ASSIGNMENT
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=90.0)
SOLUTION_SRC = (SOLUTION / "classify.py").read_text()
CODE = [q for q in A7.questions if isinstance(q, CodeQuestion)]
CODE_POINTS = sum(q.points for q in CODE)


def _answer_key():
    spec = importlib.util.spec_from_file_location("_a7_answer_key", SOLUTION / "answer_key.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _submit(
    tmp_path: Path, source: str | None, answers: str | None = None, name: str = "sub"
) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    if source is not None:
        (folder / "classify.py").write_text(source)
    if answers is not None:
        (folder / "answers.toml").write_text(answers)
    return folder


def _only(*qids: str):
    return dataclasses.replace(A7, questions=tuple(A7.question(q) for q in qids))


def _code_only():
    return dataclasses.replace(A7, questions=tuple(CODE))


def _a7_ids() -> list[str]:
    all_ids()  # loads the catalog
    import grader.catalog.a7 as cat

    src = Path(cat.__file__).read_text()
    return [mid for mid in _CATALOG if f'id="{mid}"' in src]


def _lost(report) -> list[tuple[str, str]]:
    return [
        (q.question_id, q.feedback[:400]) for q in report.questions if q.score < q.max_score - 1e-9
    ]


# ---------------------------------------------------------------- whole submissions


def test_a7_has_100_points_and_every_graded_function():
    assert A7.total_points == 100
    assert {q.function for q in CODE} == {
        "cosine_similarity",
        "softmax_cross_entropy",
        "dan_forward",
        "dan_backward",
        "ngram_counts",
        "ngram_prob",
        "ngram_perplexity",
    }
    for q in CODE:  # a worked example the student sees in every code question
        assert any(c.visible for c in q.cases(0)), q.id


def test_a7_two_students_get_their_own_cases_and_full_marks(tmp_path):
    key = _answer_key()
    seeds = {}
    for sid in ("ada@uni.edu", "grace@uni.edu"):
        folder = _submit(tmp_path, SOLUTION_SRC, key.to_toml(sid), name=sid.split("@")[0])
        report = grade_submission(folder, A7, student=sid, limits=FAST)
        assert report.score == 100, _lost(report)
        assert not any(q.misconceptions for q in report.questions)
        seeds[sid] = report.seed
    a, b = seeds.values()
    for q in CODE:
        ca = [c for c in q.cases(a) if not c.visible]
        cb = [c for c in q.cases(b) if not c.visible]
        assert repr([c.args for c in ca]) != repr([c.args for c in cb]), q.id
    assert key.answers("ada@uni.edu") != key.answers("grace@uni.edu")


def test_a7_stub_scores_zero(tmp_path):
    report = grade_submission(HANDOUT, A7, limits=FAST)
    assert report.score == 0
    assert all(q.not_attempted for q in report.questions)
    assert not any(q.misconceptions for q in report.questions)


OTHER_STYLE_TORCH = """
import math
from collections import Counter

import torch


def cosine_similarity(A, B):
    A = torch.as_tensor(A, dtype=torch.float32)
    B = torch.as_tensor(B, dtype=torch.float32)
    if A.dim() == 1:
        return (A @ B / (A.norm() * B.norm())).item()
    An = A / A.norm(dim=1, keepdim=True)
    Bn = B / B.norm(dim=1, keepdim=True)
    return An @ Bn.T


def softmax_cross_entropy(logits, y):
    z = torch.as_tensor(logits, dtype=torch.float32)
    single = z.dim() == 1
    if single:
        z, y = z[None, :], [int(y)]
    y = torch.as_tensor(y, dtype=torch.long)
    logp = torch.log_softmax(z, dim=-1)
    loss = -logp[torch.arange(len(y)), y].mean()
    grad = (logp.exp() - torch.nn.functional.one_hot(y, z.shape[1]).float()) / len(y)
    return loss.item(), (grad[0] if single else grad)


def _avg(token_ids, mask, E):
    ids = torch.as_tensor(token_ids)
    m = torch.as_tensor(mask).float()
    return (E[ids] * m[..., None]).sum(1) / m.sum(1, keepdim=True)


def dan_forward(token_ids, mask, params):
    p = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in params.items()}
    h = torch.relu(_avg(token_ids, mask, p["E"]) @ p["W1"].T + p["b1"])
    return torch.softmax(h @ p["W2"].T + p["b2"], dim=-1)


def dan_backward(token_ids, mask, params, y):
    p = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in params.items()}
    ids = torch.as_tensor(token_ids)
    m = torch.as_tensor(mask)
    avg = _avg(ids, m, p["E"])
    z = avg @ p["W1"].T + p["b1"]
    h = torch.relu(z)
    loss, g = softmax_cross_entropy(h @ p["W2"].T + p["b2"], y)
    g_z = (g @ p["W2"]) * (z > 0)
    g_avg = g_z @ p["W1"]
    n = m.sum(1, keepdim=True)
    rows = (g_avg / n)[:, None, :].expand(-1, ids.shape[1], -1)
    g_E = torch.zeros_like(p["E"]).index_add_(0, ids[m], rows[m])
    return loss, {"E": g_E, "W1": g_z.T @ avg, "b1": g_z.sum(0), "W2": g.T @ h, "b2": g.sum(0)}


def ngram_counts(corpus, n):
    c = Counter()
    for s in corpus:
        toks = ["<s>"] * (n - 1) + s + ["</s>"]
        c.update(zip(*(toks[i:] for i in range(n))))
    return c


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    total = sum(v for g, v in counts.items() if g[:-1] == tuple(context))
    return (counts.get(tuple(context) + (word,), 0) + k) / (total + k * vocab_size)


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    logs = []
    for s in sentences:
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(n - 1, len(toks)):
            logs.append(math.log(ngram_prob(counts, vocab_size, toks[i - n + 1:i], toks[i], k)))
    return math.exp(-sum(logs) / len(logs))
"""

OTHER_STYLE_LOOPS = """
import math


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def cosine_similarity(A, B):
    A, B = A.tolist(), B.tolist()
    if not isinstance(A[0], list):
        return _dot(A, B) / math.sqrt(_dot(A, A) * _dot(B, B))
    return [[_dot(a, b) / math.sqrt(_dot(a, a) * _dot(b, b)) for b in B] for a in A]


def _one(z, y):
    top = max(z)
    s = sum(math.exp(v - top) for v in z)
    p = [math.exp(v - top) / s for v in z]
    return -math.log(p[y]), [pi - (1.0 if i == y else 0.0) for i, pi in enumerate(p)]


def softmax_cross_entropy(logits, y):
    z = logits.tolist()
    if not isinstance(z[0], list):
        return _one(z, int(y))
    rows = [_one(zi, int(yi)) for zi, yi in zip(z, y)]
    B = len(rows)
    return sum(r[0] for r in rows) / B, [[g / B for g in r[1]] for r in rows]


def _matvec(W, x):
    return [sum(w * v for w, v in zip(row, x)) for row in W]


def _forward_one(ids, mask, P):
    real = [i for i, keep in zip(ids, mask) if keep]
    d = len(P["E"][0])
    avg = [sum(P["E"][i][j] for i in real) / len(real) for j in range(d)]
    z = [a + b for a, b in zip(_matvec(P["W1"], avg), P["b1"])]
    h = [max(v, 0.0) for v in z]
    logits = [a + b for a, b in zip(_matvec(P["W2"], h), P["b2"])]
    return real, avg, z, h, logits


def _plain(params):
    return {k: v.tolist() for k, v in params.items()}


def dan_forward(token_ids, mask, params):
    P = _plain(params)
    out = []
    for ids, m in zip(token_ids.tolist(), mask.tolist()):
        logits = _forward_one(ids, m, P)[-1]
        top = max(logits)
        e = [math.exp(v - top) for v in logits]
        out.append([v / sum(e) for v in e])
    return out


def dan_backward(token_ids, mask, params, y):
    P = _plain(params)
    grads = {k: [[0.0] * len(r) for r in v] if isinstance(v[0], list) else [0.0] * len(v) for k, v in P.items()}
    B = len(y)
    total = 0.0
    for ids, m, label in zip(token_ids.tolist(), mask.tolist(), y.tolist()):
        real, avg, z, h, logits = _forward_one(ids, m, P)
        loss, g = _one(logits, label)
        total += loss / B
        g = [v / B for v in g]
        for c, gc in enumerate(g):
            grads["b2"][c] += gc
            for j, hj in enumerate(h):
                grads["W2"][c][j] += gc * hj
        g_z = [sum(g[c] * P["W2"][c][j] for c in range(len(g))) * (1.0 if z[j] > 0 else 0.0) for j in range(len(z))]
        for j, gj in enumerate(g_z):
            grads["b1"][j] += gj
            for i, ai in enumerate(avg):
                grads["W1"][j][i] += gj * ai
        g_avg = [sum(g_z[j] * P["W1"][j][i] for j in range(len(g_z))) for i in range(len(avg))]
        for tok in real:
            for i, gi in enumerate(g_avg):
                grads["E"][tok][i] += gi / len(real)
    return total, grads


def ngram_counts(corpus, n):
    counts = {}
    for s in corpus:
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(len(toks) - n + 1):
            key = tuple(toks[i:i + n])
            counts[key] = counts.get(key, 0) + 1
    return counts


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    c_ctx = 0
    for gram, c in counts.items():
        if list(gram[:-1]) == list(context):
            c_ctx += c
    return (counts.get(tuple(context) + (word,), 0) + k) / (c_ctx + k * vocab_size)


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    nll, N = 0.0, 0
    for s in sentences:
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(n - 1, len(toks)):
            nll -= math.log(ngram_prob(counts, vocab_size, tuple(toks[i - n + 1:i]), toks[i], k))
            N += 1
    return math.exp(nll / N)
"""


@pytest.mark.parametrize("label", ["torch_float32", "loops_lists"])
def test_a7_other_styles_get_full_marks(tmp_path, label):
    source = {"torch_float32": OTHER_STYLE_TORCH, "loops_lists": OTHER_STYLE_LOOPS}[label]
    report = grade_submission(
        _submit(tmp_path, source), _code_only(), student="someone", limits=FAST
    )
    assert report.score == pytest.approx(CODE_POINTS), _lost(report)
    assert not any(q.misconceptions for q in report.questions)


# ---------------------------------------------------------------- one mistake each, as a student writes it

MISTAKES = {
    "cosine-missing-norm": (
        "a7.cosine_similarity",
        "return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)",
        "return (A @ B.T) / norm_B.T  # (n, m)",
    ),
    "cosine-is-dot-product": (
        "a7.cosine_similarity",
        "return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)",
        "return A @ B.T  # (n, m)",
    ),
    "softmax-unstable": (
        "a7.softmax_cross_entropy",
        "shifted = Z - Z.max(axis=1, keepdims=True)",
        "shifted = Z",
    ),
    "ce-grad-sign": (
        "a7.softmax_cross_entropy",
        "grad[rows, Y] -= 1.0  # p − e_y",
        "grad[rows, Y] -= 1.0\n    grad = -grad",
    ),
    "ce-grad-not-averaged": ("a7.softmax_cross_entropy", "    grad /= B\n", ""),
    "dan-average-includes-padding": (
        "a7.dan_forward",
        'avg = (params["E"][ids] * m[:, :, None]).sum(axis=1) / n_real  # (B, d)',
        'avg = params["E"][ids].mean(axis=1)  # (B, d)',
    ),
    "dan-repeated-token-once": (
        "a7.dan_backward",
        "np.add.at(g_E, ids[b_idx, t_idx], g_avg[b_idx] / n_real[b_idx, None])",
        "g_E[ids[b_idx, t_idx]] += g_avg[b_idx] / n_real[b_idx, None]",
    ),
    "ngram-missing-start-padding": (
        "a7.ngram_counts",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return list(sentence) + ["</s>"]',
    ),
    "addk-missing-v": (
        "a7.ngram_prob",
        "/ (c_context + k * vocab_size)",
        "/ c_context",
    ),
    "perplexity-base-2": (
        "a7.ngram_perplexity",
        "return float(np.exp(total / N))",
        "return float(2 ** (total / N))",
    ),
    "perplexity-missing-end-token": (
        "a7.ngram_perplexity",
        "for i in range(n - 1, len(tokens)):",
        "for i in range(n - 1, len(tokens) - 1):",
    ),
    "uses-library-shortcut": (
        "a7.softmax_cross_entropy",
        "def softmax_cross_entropy(logits, y):\n",
        "def softmax_cross_entropy(logits, y):\n    import torch\n"
        "    t = torch.tensor(logits, requires_grad=True)\n"
        "    loss = torch.nn.functional.cross_entropy(t if t.dim() > 1 else t[None], "
        "torch.as_tensor(y).reshape(-1))\n"
        "    loss.backward()\n    return loss.item(), t.grad\n",
    ),
}

# reused ids on a second question: (question, id, old, new)
MORE_MISTAKES = {
    "ngram-missing-start-padding@perplexity": (
        "a7.ngram_perplexity",
        "ngram-missing-start-padding",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return ["<s>"] + list(sentence) + ["</s>"]',
    ),
    "addk-missing-v@perplexity": (
        "a7.ngram_perplexity",
        "addk-missing-v",
        "/ (c_context + k * vocab_size)",
        "/ c_context",
    ),
    "ce-grad-sign@dan_backward": (
        "a7.dan_backward",
        "ce-grad-sign",
        'g_h = g_logits @ params["W2"]  # (B, h)',
        'g_logits = -g_logits\n    g_h = g_logits @ params["W2"]  # (B, h)',
    ),
    "cosine-missing-norm@vectors": (
        "a7.cosine_similarity",
        "cosine-missing-norm",
        "return float(A @ B / (np.linalg.norm(A) * np.linalg.norm(B)))\n"
        "    norm_A = np.linalg.norm(A, axis=1, keepdims=True)  # (n, 1)",
        "return float(A @ B / np.linalg.norm(A))\n    norm_A = np.ones((A.shape[0], 1))",
    ),
}


def _mistake_cases():
    out = [(label, q, label, old, new) for label, (q, old, new) in MISTAKES.items()]
    out += [(label, *rest) for label, rest in MORE_MISTAKES.items()]
    return out


@pytest.mark.parametrize(
    ("label", "qid", "mid", "old", "new"), _mistake_cases(), ids=[c[0] for c in _mistake_cases()]
)
def test_a7_single_mistake_is_named(tmp_path, label, qid, mid, old, new):
    assert SOLUTION_SRC.count(old) == 1, old
    report = grade_submission(
        _submit(tmp_path, SOLUTION_SRC.replace(old, new)), _only(qid), limits=FAST
    )
    (q,) = report.questions
    assert q.misconceptions == [mid], q.feedback
    assert q.score < q.max_score


def test_a7_every_catalog_id_has_a_mistake_test():
    assert set(_a7_ids()) <= set(MISTAKES)


def test_a7_forward_mistake_is_charged_once(tmp_path):
    """The DAN's padded average is charged in dan_forward; dan_backward built on the same
    average (forward and backward consistent) earns its points by follow-through."""
    wrong = SOLUTION_SRC.replace(
        'avg = (params["E"][ids] * m[:, :, None]).sum(axis=1) / n_real  # (B, d)',
        'avg = params["E"][ids].mean(axis=1)  # (B, d)',
    ).replace(
        "np.add.at(g_E, ids[b_idx, t_idx], g_avg[b_idx] / n_real[b_idx, None])",
        "np.add.at(g_E, ids.ravel(), np.repeat(g_avg, ids.shape[1], axis=0) / ids.shape[1])",
    )
    report = grade_submission(
        _submit(tmp_path, wrong), _only("a7.dan_forward", "a7.dan_backward"), limits=FAST
    )
    forward, backward = report.questions
    assert (
        forward.misconceptions == ["dan-average-includes-padding"]
        and forward.score < forward.max_score
    )
    assert backward.score == pytest.approx(backward.max_score), backward.feedback


def test_a7_correct_answers_are_not_explained_as_mistakes():
    """No mutant coincides with the reference on every hidden case of a question."""
    for seed in (0, 99):
        for q in CODE:
            if q.custom is not None:
                continue
            hidden = [c for c in q.cases(seed) if not c.visible]
            want = [run_trusted(q.reference, c) for c in hidden]
            for mid, fn in q.mutants.items():
                outs = [concrete(run_trusted(fn, c)) for c in hidden]
                assert any(compare(o, w) for o, w in zip(outs, want)), (q.id, mid, seed)


WRONG_ANSWERS = """
cosine_query_A = {dot}
nearest_by_cosine = "{dot_letter}"
ce_gradient = {ascent}
bigram_prob = {no_v}
sentence_perplexity = {base2}
"""


def test_a7_written_wrong_forms_are_named(tmp_path):
    n = variants.numbers(A7.id, None)
    q, a = np.array(n["query"], float), np.array(n["candidate_A"], float)
    dot_letter = "A" if q @ a > q @ np.array(n["candidate_B"], float) else "B"
    _, g = cl.softmax_cross_entropy(np.array(n["logits"], float), n["label"])
    counts = cl.ngram_counts(n["corpus"], 2)
    V = len({w for s in n["corpus"] for w in s}) + 1
    first, second = n["bigram"]
    c = counts.get((first, second), 0)
    c_first = sum(v for k, v in counts.items() if k[0] == first)
    ppl = cl.ngram_perplexity(counts, V, [n["test_sentence"]], 2)
    text = WRONG_ANSWERS.format(
        dot=float(q @ a),
        dot_letter=dot_letter,
        ascent="[" + ", ".join(str(-x) for x in g) + "]",
        no_v=(c + 1) / c_first,
        base2=2 ** np.log(ppl),  # 2 raised to the cross-entropy in nats
    )
    written = dataclasses.replace(
        A7, questions=tuple(x for x in A7.questions if isinstance(x, WrittenQuestion))
    )
    report = grade_submission(_submit(tmp_path, None, text), written, limits=FAST)
    named = {r.question_id: r.misconceptions for r in report.questions}
    assert named["a7.w_cosine_value"] == ["cosine-is-dot-product"]
    assert named["a7.w_nearest_by_cosine"] == ["cosine-is-dot-product"]
    assert named["a7.w_ce_gradient"] == ["ce-grad-sign"]
    assert named["a7.w_bigram_prob"] == ["addk-missing-v"]
    assert named["a7.w_sentence_perplexity"] == ["perplexity-base-2"]


# ---------------------------------------------------------------- the hidden cases separate

COMPARED = [q for q in CODE if q.custom is None]


@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1])
def test_a7_mutants_pairwise_separated_on_hidden_cases(seed):
    for q in COMPARED:
        hidden = [c for c in q.cases(seed) if not c.visible]
        fns = {"reference": q.reference, **q.mutants}
        outs = {k: [concrete(run_trusted(f, c)) for c in hidden] for k, f in fns.items()}
        names = list(fns)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                assert any(compare(x, y, exact=True) for x, y in zip(outs[a], outs[b])), (
                    q.id,
                    a,
                    b,
                    seed,
                )


@pytest.mark.parametrize("seed", [0, 4242])
def test_a7_counts_judge_names_the_mutant_and_passes_the_reference(seed):
    q = A7.question("a7.ngram_counts")
    cases = q.cases(seed)
    right = suite.judge_ngram_counts(cases, [cl.ngram_counts(*c.args) for c in cases])
    assert right.fraction == 1.0 and right.misconceptions == []
    no_start = [cl.ngram_counts(*c.args, start_pad=0) for c in cases]
    j = suite.judge_ngram_counts(cases, no_start)
    assert j.misconceptions == ["ngram-missing-start-padding"] and j.fraction < 1.0
    extra = [{**cl.ngram_counts(*c.args), ("zzz",) * c.args[1]: 1} for c in cases]
    j = suite.judge_ngram_counts(cases, extra)
    assert (
        j.fraction == 0.0 and j.misconceptions == []
    )  # an extra n-gram is wrong, and no known mistake
    hidden = [c for c in cases if not c.visible]
    assert all(cl.ngram_counts(*c.args) != cl.ngram_counts(*c.args, start_pad=0) for c in hidden)


def test_a7_every_catalog_id_reachable_from_a_hidden_case():
    reached = set()
    for q in A7.questions:
        if isinstance(q, CodeQuestion) and q.custom is None:
            hidden = [c for c in q.cases(0) if not c.visible]
            for mid, fn in q.mutants.items():
                if any(
                    compare(concrete(run_trusted(fn, c)), run_trusted(q.reference, c), exact=True)
                    for c in hidden
                ):
                    reached.add(mid)
        elif isinstance(q, CodeQuestion):
            reached |= set(suite.COUNTS_MUTANTS)  # named by the judge (test above)
        elif q.wrong_forms is not None:
            reached |= {wf.misconception for wf in q.wrong_forms(variants.numbers(A7.id, None))}
    assert set(_a7_ids()) <= reached


# ---------------------------------------------------------------- outside authorities and the notes


def test_a7_visible_cases_are_the_readmes_worked_examples():
    readme = (HANDOUT / "README.md").read_text()
    loss, grad = cl.softmax_cross_entropy(np.array([2.0, 1.0, 0.1]), 0)
    assert f"{loss:.5f}" in readme and "[−0.3410, 0.2424, 0.0986]" in readme
    probs = cl.dan_forward(suite.DAN_IDS, suite.DAN_MASK, suite.DAN_EXAMPLE)
    assert "[[0.7503, 0.2497], [0.5250, 0.4750]]" in readme
    np.testing.assert_allclose(probs, [[0.7503, 0.2497], [0.5250, 0.4750]], atol=5e-5)
    counts = cl.ngram_counts(suite.TOY_CORPUS, 2)
    assert cl.ngram_prob(counts, suite.TOY_V, ("the",), "cat") == pytest.approx(2 / 9)
    ppl = cl.ngram_perplexity(counts, suite.TOY_V, [["the", "cat"]], 2)
    assert ppl == pytest.approx((0.3 * 2 / 9 * 1 / 9) ** (-1 / 3)) and f"{ppl:.4f}" in readme


def test_a7_written_numbers_match_nltk_for_every_probe_key():
    from nltk.lm import Laplace

    for key in (None, "probe-a@example.org", "probe-b@example.org"):
        n = variants.numbers(A7.id, key)
        corpus = n["corpus"]
        V = len({w for s in corpus for w in s}) + 1
        model = Laplace(2)
        # our padding (one "<s>", one "</s>"); a vocabulary of the word types and "</s>" only:
        # nltk adds "<UNK>" to it, so its V is one more than ours
        model.fit(
            [cl.ngrams(cl.pad(s, 2), 2) for s in corpus], [w for s in corpus for w in s] + ["</s>"]
        )
        assert len(model.vocab) == V + 1
        first, second = n["bigram"]
        c = cl.ngram_counts(corpus, 2)
        want = (model.counts[[first]][second] + 1) / (model.counts[[first]].N() + V)
        assert suite._bigram_prob(n) == pytest.approx(want)
        assert suite._bigram_prob(n) == pytest.approx(cl.ngram_prob(c, V, (first,), second))


def test_a7_smoothing_mistake_is_charged_once_in_the_perplexity(tmp_path):
    """add-k without k·V is charged in ngram_prob; the perplexity built on that ngram_prob
    earns its points by follow-through."""
    wrong = SOLUTION_SRC.replace("/ (c_context + k * vocab_size)", "/ c_context")
    report = grade_submission(
        _submit(tmp_path, wrong), _only("a7.ngram_prob", "a7.ngram_perplexity"), limits=FAST
    )
    prob, ppl = report.questions
    assert prob.misconceptions == ["addk-missing-v"] and prob.score < prob.max_score
    assert ppl.score == pytest.approx(ppl.max_score), ppl.feedback
