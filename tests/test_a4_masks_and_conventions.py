"""a4, issue 33: one mask dropped is named apart from every mask ignored, and the conventions
widely used code follows where the handout fixes another get their own names.

Each submission is the instructor's solution with the functions under test written again after
it (a later `def` wins), in the student's own style or the way a widely used implementation
writes them behind a thin adapter: Meta's LLaMA (RMSNorm, RoPE through complex numbers, the
SwiGLU feed-forward), Hugging Face's `rotate_half` RoPE, and the `x / (rms + eps)` RMSNorm many
implementations copy. Expected names come from the handout's rules, never from the mutants.
"""

from __future__ import annotations

import textwrap

import pytest
from conftest import ROOT

from grader import catalog

SOLUTION_SRC = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()


def _with(*functions: str) -> str:
    return SOLUTION_SRC + "".join("\n\n" + textwrap.dedent(f).strip() + "\n" for f in functions)


def _by_question(report) -> dict[str, object]:
    return {q.question_id: q for q in report.questions}


# ---------------------------------------------------------------- multi-head attention's masks

# the causal mask built, then overwritten by the padding mask (padding still applied)
MHA_CAUSAL_OVERWRITTEN = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else None
    if key_padding_mask is not None:
        mask = np.asarray(key_padding_mask, dtype=bool)[..., None, None, :]
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)
"""

# `causal` never read: only the padding mask is applied
MHA_CAUSAL_NEVER_READ = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = np.asarray(X, dtype=np.float64)
    mask = None
    if key_padding_mask is not None:
        mask = np.asarray(key_padding_mask, dtype=bool)[..., None, None, :]
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)
"""

# control: both masks built, neither passed on
MHA_BOTH_IGNORED = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else None
    if key_padding_mask is not None:
        pad = np.asarray(key_padding_mask, dtype=bool)[..., None, None, :]
        mask = pad if mask is None else (mask & pad)
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, None)
"""

# control: the causal mask applied, the padding mask never joined
MHA_PADDING_DROPPED = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else None
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)
"""


@pytest.mark.parametrize(
    ("source", "named"),
    [
        (MHA_CAUSAL_OVERWRITTEN, "causal-mask-dropped"),
        (MHA_CAUSAL_NEVER_READ, "causal-mask-dropped"),
        (MHA_BOTH_IGNORED, "mask-ignored"),
        (MHA_PADDING_DROPPED, "padding-mask-dropped"),
    ],
    ids=["causal-overwritten", "causal-never-read", "both-ignored", "padding-dropped"],
)
def test_a4_one_mask_dropped_is_not_every_mask_ignored(grade_files, source, named):
    (q,) = grade_files("a4", {"transformer.py": _with(source)}, questions=("a4.mha",)).questions
    assert q.score < q.max_score and q.misconceptions == [named], q.feedback
    if named != "mask-ignored":
        assert "equals unmasked attention" not in q.feedback, q.feedback


def test_a4_the_words_of_the_mask_mistakes_say_what_the_code_did():
    assert "unmasked attention" in catalog.get("mask-ignored").explanation
    dropped = catalog.get("causal-mask-dropped")
    assert "unmasked" not in dropped.explanation and "padding mask did" in dropped.explanation
    assert "causal mask did" in catalog.get("padding-mask-dropped").explanation


def test_a4_a_dropped_causal_mask_is_charged_once_at_multi_head_attention(grade_files):
    """The blocks and the forward pass that call the student's MHA with causal=True carry its
    mistake (full follow-through), and the encoder, which is not causal, is not touched."""
    report = grade_files(
        "a4",
        {"transformer.py": _with(MHA_CAUSAL_NEVER_READ)},
        questions=("a4.mha", "a4.encoder_block", "a4.decoder_block", "a4.gpt_forward"),
    )
    qs = _by_question(report)
    assert qs["a4.mha"].misconceptions == ["causal-mask-dropped"]
    assert qs["a4.encoder_block"].score == qs["a4.encoder_block"].max_score
    for qid in ("a4.decoder_block", "a4.gpt_forward"):
        q = qs[qid]
        assert [c["misconception"] for c in q.carried] == ["causal-mask-dropped"], q.feedback
        assert q.score == q.max_score, q.feedback


# ---------------------------------------------------------------- masks as numbers

# nanoGPT's float buffer, torch.tril(torch.ones(T, T)), returned as the causal mask; the
# solution's multi-head attention combines it with the padding mask by `&`, which floats refuse
CAUSAL_FLOAT = """
def causal_mask(T):
    return np.tril(np.ones((T, T)))
"""

PADDING_INT = """
def padding_mask(lengths, T):
    return (np.arange(T)[None, :] < np.asarray(lengths)[:, None]).astype(np.int64)
"""


def test_a_mask_of_numbers_is_docked_where_it_is_built_and_not_charged_again(grade_files):
    """The handout's masks are boolean: a causal mask of 0.0/1.0 loses its own question, named
    as itself, and the attention that calls it is judged with the reference's mask in its place
    (follow-through), not charged again with a TypeError."""
    report = grade_files(
        "a4",
        {"transformer.py": _with(CAUSAL_FLOAT)},
        questions=("a4.causal_mask", "a4.mha", "a4.decoder_block", "a4.gpt_forward"),
    )
    qs = _by_question(report)
    mask = qs["a4.causal_mask"]
    assert mask.score == 0 and mask.misconceptions == ["mask-not-boolean"], mask.feedback
    assert "boolean" in mask.feedback
    for qid in ("a4.mha", "a4.decoder_block", "a4.gpt_forward"):
        q = qs[qid]
        assert q.score == q.max_score and not q.misconceptions, (qid, q.feedback)
    assert "causal_mask" in qs["a4.mha"].feedback  # says whose function was replaced


def test_an_integer_padding_mask_is_named_and_a_boolean_one_is_not(grade_files):
    report = grade_files(
        "a4", {"transformer.py": _with(PADDING_INT)}, questions=("a4.padding_mask",)
    )
    (q,) = report.questions
    assert q.score < q.max_score and q.misconceptions == ["mask-not-boolean"], q.feedback
    control = grade_files(  # the same entries as booleans
        "a4",
        {"transformer.py": _with(PADDING_INT.replace(".astype(np.int64)", ".astype(bool)"))},
        questions=("a4.padding_mask", "a4.causal_mask", "a4.mha"),
    )
    for q in control.questions:
        assert q.score == q.max_score and not q.misconceptions, q.feedback


def test_a_boolean_expected_array_asks_for_booleans():
    import numpy as np

    from grader.engine.checks import compare

    want = np.tril(np.ones((3, 3), dtype=bool))
    assert compare(want.copy(), want) == []
    assert compare(want.tolist(), want) == []  # a list of True/False
    (m,) = compare(want.astype(np.float64), want)
    assert m.reason == "type" and "boolean" in m.message
    (m,) = compare(want.astype(np.int64), want)
    assert m.reason == "type"
    (m,) = compare((~want).astype(np.float64), want)  # wrong entries: the values are the news
    assert m.reason == "exact"
    assert compare(want.astype(np.float64), want.astype(np.float64)) == []  # numbers expected


# ---------------------------------------------------------------- field conventions

# RMSNorm as many implementations write it: the RMS from the L2 norm, ε added outside the root
RMSNORM_EPS_OUTSIDE = """
import torch


class FieldRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x.norm(2, dim=-1, keepdim=True) * (1.0 / x.shape[-1] ** 0.5)
        return self.weight * (x / (norm + self.eps))


def rms_norm(x, gamma, eps=1e-6):  # the adapter
    layer = FieldRMSNorm(len(gamma), eps=eps).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(gamma, dtype=torch.float64))
        return layer(torch.as_tensor(x, dtype=torch.float64)).numpy()
"""

# Meta's LLaMA RMSNorm (llama/model.py): ε inside the root, the handout's rule
RMSNORM_LLAMA = """
import torch


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def rms_norm(x, gamma, eps=1e-6):  # the adapter
    layer = LlamaRMSNorm(len(gamma), eps=eps).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(gamma, dtype=torch.float64))
        return layer(torch.as_tensor(x, dtype=torch.float64)).numpy()
"""

# Hugging Face's rotate_half RoPE: features i and i + d/2 rotated together
ROPE_ROTATE_HALF = """
import torch


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(X, base=10000.0):  # the adapter
    X = torch.as_tensor(X, dtype=torch.float64)
    T, dim = X.shape[-2], X.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return ((X * emb.cos()) + (rotate_half(X) * emb.sin())).numpy()
"""

# Meta's LLaMA RoPE: neighbouring features as one complex number, turned by polar(1, t θ_i)
ROPE_LLAMA = """
import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x, freqs_cis):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)


def apply_rope(X, base=10000.0):  # the adapter: (..., T, d) in, (..., T, d) out
    X = torch.as_tensor(X, dtype=torch.float64)
    return apply_rotary_emb(X, precompute_freqs_cis(X.shape[-1], X.shape[-2], base)).numpy()
"""

# Meta's LLaMA FeedForward: w2(silu(w1 x) * w3 x), w1 the gate and w3 the up projection
SWIGLU_LLAMA = """
import torch
import torch.nn.functional as F


class FeedForward(torch.nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = torch.nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def swiglu_ffn(X, W_gate, W_up, W_down):  # the adapter
    hidden, dim = W_gate.shape
    ffn = FeedForward(dim, hidden).double()
    with torch.no_grad():
        ffn.w1.weight.copy_(torch.as_tensor(W_gate))
        ffn.w3.weight.copy_(torch.as_tensor(W_up))
        ffn.w2.weight.copy_(torch.as_tensor(W_down))
        return ffn(torch.as_tensor(X, dtype=torch.float64)).numpy()
"""


def test_a4_field_conventions_the_handout_excludes_are_named(grade_files):
    report = grade_files(
        "a4",
        {"transformer.py": _with(RMSNORM_EPS_OUTSIDE, ROPE_ROTATE_HALF)},
        questions=("a4.rms_norm", "a4.rope"),
    )
    qs = _by_question(report)
    for qid, named in (
        ("a4.rms_norm", "rmsnorm-eps-outside-sqrt"),
        ("a4.rope", "rope-halves-not-interleaved"),
    ):
        assert qs[qid].score < qs[qid].max_score, qs[qid].feedback
        assert qs[qid].misconceptions == [named], qs[qid].feedback


def test_a4_llamas_way_is_the_handouts_rule(grade_files):
    """Controls: LLaMA's RMSNorm, complex-number RoPE and SwiGLU feed-forward get full marks."""
    report = grade_files(
        "a4",
        {"transformer.py": _with(RMSNORM_LLAMA, ROPE_LLAMA, SWIGLU_LLAMA)},
        questions=("a4.rms_norm", "a4.rope", "a4.swiglu"),
    )
    for q in report.questions:
        assert q.score == q.max_score and q.misconceptions == [], (q.question_id, q.feedback)


def test_a4_the_catalog_credits_rotate_half_to_hugging_face_not_llama():
    words = catalog.get("rope-halves-not-interleaved").explanation
    assert "Hugging Face" in words and "rotate_half" in words
    assert "LLaMA's code)" not in words and "Meta's LLaMA code does" in words
    rule = catalog.get("rmsnorm-eps-outside-sqrt")
    assert "sqrt(mean(x²) + ε)" in rule.explanation and rule.credit == 0
