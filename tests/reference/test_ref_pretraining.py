"""reference/params.py, bpe.py and masking.py: GPT-2 counts, torch-built models, BPE by hand, masks."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
import torch
from torch import nn

from reference.bpe import bpe_learn, bpe_segment
from reference.masking import (
    IGNORE_INDEX,
    bert_mask,
    causal_lm_loss,
    next_token_targets,
    span_corruption,
)
from reference.params import per_block_expression, per_block_formula, transformer_parameter_count

GPT2_SMALL = (50257, 1024, 768, 12, 3072)

# ---- parameter counts ----


def test_gpt2_small_per_component_table():
    c = transformer_parameter_count(*GPT2_SMALL)
    # slides 002, "Parameter Count: Embeddings / Per Block / Total"
    assert c["token_embedding"] == 38_597_376
    assert c["position_embedding"] == 786_432
    assert c["attention_per_block"] == 2_362_368  # 4d² + 4d
    assert c["ffn_per_block"] == 4_722_432  # 2 d d_ff + d_ff + d
    assert c["norms_per_block"] == 2 * 1_536  # LayerNorm 1 and 2, 2d each
    assert c["per_block"] == 7_087_872
    assert c["blocks"] == 85_054_464
    assert c["final_norm"] == 1_536
    assert c["lm_head"] == 0  # tied
    assert c["total"] == 124_439_808


def test_gpt2_small_untied_head_adds_the_embedding_size():
    c = transformer_parameter_count(*GPT2_SMALL, tied_embeddings=False)
    assert c["lm_head"] == 38_597_376
    assert c["total"] == 124_439_808 + 38_597_376


def test_per_block_formula_12d2_plus_13d():
    d = sympy.Symbol("d", positive=True)
    assert sympy.simplify(per_block_expression() - (12 * d**2 + 13 * d)) == 0
    assert per_block_formula(768) == 7_087_872  # slides 002 block total
    for d_val in (64, 512, 768, 1600):
        c = transformer_parameter_count(1000, 16, d_val, 1, 4 * d_val)
        assert c["per_block"] == per_block_formula(d_val)


def test_rejects_unknown_variants():
    with pytest.raises(ValueError, match="ffn"):
        transformer_parameter_count(10, 0, 8, 1, 32, ffn="relu2")
    with pytest.raises(ValueError, match="norm"):
        transformer_parameter_count(10, 0, 8, 1, 32, norm="batchnorm")


class _Block(nn.Module):
    def __init__(self, d, d_ff, biases, ffn, norm):
        super().__init__()
        Norm = nn.LayerNorm if norm == "layernorm" else nn.RMSNorm
        self.ln_1 = Norm(d)
        self.attn = nn.MultiheadAttention(d, 4, bias=biases)  # q, k, v, out projections
        self.ln_2 = Norm(d)
        if ffn == "gelu":
            self.mlp = nn.Sequential(
                nn.Linear(d, d_ff, bias=biases), nn.GELU(), nn.Linear(d_ff, d, bias=biases)
            )
        else:
            self.gate = nn.Linear(d, d_ff, bias=biases)
            self.up = nn.Linear(d, d_ff, bias=biases)
            self.down = nn.Linear(d_ff, d, bias=biases)


def _torch_gpt(V, P, d, L, d_ff, tied, biases, ffn, norm) -> nn.Module:
    """A GPT-2-shaped model from torch modules, built per the configuration (meta: no memory)."""
    with torch.device("meta"):
        m = nn.Module()
        m.wte = nn.Embedding(V, d)
        if P:
            m.wpe = nn.Embedding(P, d)
        m.h = nn.ModuleList(_Block(d, d_ff, biases, ffn, norm) for _ in range(L))
        m.ln_f = nn.LayerNorm(d) if norm == "layernorm" else nn.RMSNorm(d)
        m.lm_head = nn.Linear(d, V, bias=False)
        if tied:
            m.lm_head.weight = m.wte.weight
    return m


@pytest.mark.parametrize(
    "config",
    [
        dict(tied=True, biases=True, ffn="gelu", norm="layernorm", P=1024),  # GPT-2 small
        dict(tied=False, biases=True, ffn="gelu", norm="layernorm", P=1024),
        dict(tied=True, biases=False, ffn="gelu", norm="layernorm", P=1024),
        dict(tied=False, biases=False, ffn="swiglu", norm="rmsnorm", P=0),  # LLaMA-like
        dict(tied=True, biases=True, ffn="swiglu", norm="rmsnorm", P=0),
        dict(tied=False, biases=False, ffn="gelu", norm="rmsnorm", P=128),
    ],
    ids=lambda c: "-".join(str(v) for v in c.values()),
)
def test_count_equals_torch_numel(config):
    V, _, d, L, d_ff = GPT2_SMALL
    model = _torch_gpt(
        V, config["P"], d, L, d_ff, config["tied"], config["biases"], config["ffn"], config["norm"]
    )
    expected = sum(p.numel() for p in model.parameters())  # shared (tied) weights count once
    c = transformer_parameter_count(
        V, config["P"], d, L, d_ff, config["tied"], config["biases"], config["ffn"], config["norm"]
    )
    assert c["total"] == expected
    if config == dict(tied=True, biases=True, ffn="gelu", norm="layernorm", P=1024):
        assert expected == 124_439_808


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_the_norm_hooks_count_the_models_without_those_norms(norm):
    """The hooks behind "params-missing-norms": a block with its second norm taken out
    (norms_in_block=1) and a model without the final norm (final_norm=False), against torch."""
    V, P, d, L, d_ff = 1000, 64, 48, 3, 192
    config = (V, P, d, L, d_ff, True, True, "gelu", norm)
    one_each = _torch_gpt(*config)
    for block in one_each.h:
        del block.ln_2
    no_final = _torch_gpt(*config)
    del no_final.ln_f

    def numel(m: nn.Module) -> int:
        return sum(p.numel() for p in m.parameters())

    assert transformer_parameter_count(*config, norms_in_block=1)["total"] == numel(one_each)
    assert transformer_parameter_count(*config, final_norm=False)["total"] == numel(no_final)
    assert numel(one_each) < numel(no_final) < numel(_torch_gpt(*config))  # the hooks differ


@pytest.mark.parametrize("ffn", ["gelu", "swiglu"])
def test_the_bias_hook_counts_the_models_with_biases_in_one_part_only(ffn):
    """The hook behind "params-missing-biases"' partial forms: biases in attention only
    (biased=("attention",)) or in the FFN only (biased=("ffn",)), against torch."""
    V, P, d, L, d_ff = 1000, 64, 48, 3, 192
    config = (V, P, d, L, d_ff, True, True, ffn, "layernorm")
    attention_only, ffn_only = _torch_gpt(*config), _torch_gpt(*config)
    for block in attention_only.h:
        linears = [m for m in block.modules() if isinstance(m, nn.Linear)]
        for lin in linears:
            if lin is not block.attn.out_proj:
                lin.bias = None
    for block in ffn_only.h:
        block.attn.in_proj_bias = None
        block.attn.out_proj.bias = None

    def numel(m: nn.Module) -> int:
        return sum(p.numel() for p in m.parameters())

    count = transformer_parameter_count
    assert count(*config, biased=("attention",))["total"] == numel(attention_only)
    assert count(*config, biased=("ffn",))["total"] == numel(ffn_only)
    assert numel(ffn_only) < numel(_torch_gpt(*config))  # the parts' biases really left
    assert numel(attention_only) < numel(_torch_gpt(*config))


# ---- BPE ----
# Worked by hand (Sennrich et al. 2016's corpus; "</w>" its own symbol; ties -> smallest pair):
#   low:5  lower:2  newest:6  widest:3
#   pair counts: (e,s) 9 (s,t) 9 (t,</w>) 9 (w,e) 8 (l,o) 7 (o,w) 7 (e,w) 6 (n,e) 6 (w,</w>) 5 …
#   1 (e,s)        9-way tie among (e,s) (s,t) (t,</w>): "e" is smallest
#   2 (es,t)       tie (es,t) 9 / (t,</w>) 9: "es" < "t"
#   3 (est,</w>)   9
#   4 (l,o)        tie (l,o) 7 / (o,w) 7
#   5 (lo,w)       7
#   6 (e,w)        tie at 6: (e,w) < (n,e) < (w,est</w>)
#   7 (ew,est</w>) tie at 6: (ew,est</w>) < (n,ew)
#   8 (n,ewest</w>) 6
#   9 (low,</w>)   5
#  10 (d,est</w>)  tie at 3: (d,est</w>) < (i,d) < (w,i)
HAND_CORPUS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
HAND_MERGES = [
    ("e", "s"),
    ("es", "t"),
    ("est", "</w>"),
    ("l", "o"),
    ("lo", "w"),
    ("e", "w"),
    ("ew", "est</w>"),
    ("n", "ewest</w>"),
    ("low", "</w>"),
    ("d", "est</w>"),
]


def test_bpe_learn_hand_worked_corpus():
    assert bpe_learn(HAND_CORPUS, 10) == HAND_MERGES


def test_bpe_segment_hand_worked_words():
    # lowest: l o w e s t </w> -> (e,s) (es,t) (est,</w>) (l,o) (lo,w) -> low est</w>
    assert bpe_segment("lowest", HAND_MERGES) == ["low", "est</w>"]
    # newer: n e w e r </w> -> (e,w) -> n ew e r </w>: the bare "</w>" is the last symbol
    assert bpe_segment("newer", HAND_MERGES) == ["n", "ew", "e", "r", "</w>"]
    assert bpe_segment("newest", HAND_MERGES) == ["newest</w>"]
    assert bpe_segment("low", []) == ["l", "o", "w", "</w>"]


def test_bpe_counts_are_weighted():
    # unweighted, ("a","b") appears in 2 word types vs ("c","d") in 1; weighted, "cd" wins 10 to 2
    assert bpe_learn({"ab": 1, "abx": 1, "cd": 10}, 1) == [("c", "d")]


def test_bpe_end_of_word_is_a_symbol_that_merges():
    # "aa" ×3 and "ba" ×1: pairs (a,a) 3, (a,</w>) 4, (b,a) 1 -> first merge involves "</w>"
    assert bpe_learn({"aa": 3, "ba": 1}, 1) == [("a", "</w>")]


def test_bpe_overlapping_pairs_count_and_merge_left_to_right():
    # "aaa</w>": (a,a) counted twice = 2 > (a,</w>) 1; merging gives "aa a </w>"
    merges = bpe_learn({"aaa": 1}, 1)
    assert merges == [("a", "a")]
    assert bpe_segment("aaa", merges) == ["aa", "a", "</w>"]


def test_bpe_stops_early_when_no_pair_is_left():
    merges = bpe_learn(HAND_CORPUS, 1000)
    assert len(merges) < 1000
    assert merges[:10] == HAND_MERGES
    for word in HAND_CORPUS:
        assert bpe_segment(word, merges) == [word + "</w>"]
    assert bpe_learn({"x": 3}, 5) == [("x", "</w>")]


# ---- BERT masking ----


def _many_masks(p=0.15, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    V, mask_id, specials = 1000, 3, (0, 1, 2, 3)
    tokens = rng.integers(4, V, size=n)
    tokens[::50] = 0  # some [CLS]-like specials
    tokens[7::50] = 1
    inputs, labels = bert_mask(tokens, rng, mask_id, V, specials, p)
    return tokens, inputs, labels, mask_id, V


def test_bert_mask_label_invariants():
    tokens, inputs, labels, _, V = _many_masks()
    selected = labels != IGNORE_INDEX
    np.testing.assert_array_equal(labels[selected], tokens[selected])
    np.testing.assert_array_equal(inputs[~selected], tokens[~selected])  # unselected unchanged
    assert not np.any(selected & np.isin(tokens, [0, 1, 2, 3]))  # specials never selected
    assert inputs.min() >= 0 and inputs.max() < V


def test_bert_mask_selection_rate_near_p():
    tokens, _, labels, _, _ = _many_masks(p=0.15)
    eligible = ~np.isin(tokens, [0, 1, 2, 3])
    rate = np.mean(labels[eligible] != IGNORE_INDEX)
    n = eligible.sum()
    assert abs(rate - 0.15) < 4 * np.sqrt(0.15 * 0.85 / n)


def test_bert_mask_80_10_10_split():
    tokens, inputs, labels, mask_id, V = _many_masks(n=60_000, seed=1)
    sel = labels != IGNORE_INDEX
    n = sel.sum()
    masked = np.mean(inputs[sel] == mask_id)
    unchanged = np.mean(inputs[sel] == tokens[sel])
    random_other = 1 - masked - unchanged
    # the 10% random ids equal the original with probability ~1/V, so "unchanged" ≈ 0.1 + 0.1/V
    for observed, expected in ((masked, 0.8), (unchanged, 0.1), (random_other, 0.1)):
        assert abs(observed - expected) < 4 * np.sqrt(expected * (1 - expected) / n)


def test_bert_mask_is_reproducible_per_generator_state():
    tokens = np.arange(5, 105)
    a = bert_mask(tokens, np.random.default_rng(42), 3, 200)
    b = bert_mask(tokens, np.random.default_rng(42), 3, 200)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# ---- next-token targets, causal LM loss, span corruption ----


def test_next_token_targets_shift_and_pad():
    tokens = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])  # pad_id 0
    inputs, targets = next_token_targets(tokens, 0)
    np.testing.assert_array_equal(inputs, [[5, 6, 7], [8, 9, 0]])
    np.testing.assert_array_equal(targets, [[6, 7, -100], [9, -100, -100]])


def test_causal_lm_loss_matches_torch_cross_entropy():
    rng = np.random.default_rng(30)
    logits = rng.normal(size=(2, 4, 6))
    tokens = np.array([[1, 2, 3, 0], [4, 5, 0, 0]])
    expected = torch.nn.functional.cross_entropy(
        torch.as_tensor(logits[:, :-1]).reshape(-1, 6),
        torch.as_tensor(np.where(tokens[:, 1:] == 0, -100, tokens[:, 1:])).reshape(-1),
    )
    assert causal_lm_loss(logits, tokens, 0) == pytest.approx(expected.item(), abs=1e-12)


def test_span_corruption_t5_paper_example():
    # Raffel et al. (2020), Figure 2: "Thank you for inviting me to your party last week."
    words = ["Thank", "you", "for", "inviting", "me", "to", "your", "party", "last", "week", "."]
    vocab = {w: i for i, w in enumerate(words)}
    X, Y, Z = 100, 99, 98  # <extra_id_0>, <extra_id_1>, <extra_id_2>
    inputs, targets = span_corruption([vocab[w] for w in words], [(2, 2), (8, 1)], [X, Y, Z])
    inv = {**{i: w for w, i in vocab.items()}, X: "<X>", Y: "<Y>", Z: "<Z>"}
    assert " ".join(inv[i] for i in inputs) == "Thank you <X> me to your party <Y> week ."
    assert " ".join(inv[i] for i in targets) == "<X> for inviting <Y> last <Z>"


def test_span_corruption_rejects_overlap():
    with pytest.raises(ValueError, match="non-overlapping"):
        span_corruption(list(range(10)), [(2, 3), (4, 1)], [99, 98, 97])


@pytest.mark.parametrize(
    "ffn, norm, biases",
    [
        ("gelu", "layernorm", True),
        ("gelu", "layernorm", False),
        ("swiglu", "rmsnorm", True),
        ("swiglu", "rmsnorm", False),
    ],
)
def test_per_block_text_is_the_sympy_polynomial(ffn, norm, biases):
    import sympy

    from reference import params

    text = params.per_block_text(ffn, norm, biases)
    d = sympy.Symbol("d", positive=True)
    assert (
        sympy.expand(
            sympy.sympify(text, locals={"d": d}) - params.per_block_expression(ffn, norm, biases)
        )
        == 0
    )
    assert params.per_block_text() == "12*d**2 + 13*d"  # the notes' 12d^2 + 13d
