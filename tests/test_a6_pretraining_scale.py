"""a6 (pretraining and scale): the solution scores full, the handout zero, every catalog mistake is named.

Expected values come from the slides' tables (GPT-2 small), the README's hand-worked BPE
example (Sennrich et al.'s corpus) and torch-built models; mistakes are written in code as a
student would write them, not by calling the suite's mutants.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT, answer_key, only, write_submission

import grader.suites.a6_pretraining_scale as suite
from grader import sandbox
from grader.catalog import _CATALOG, all_ids
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from reference import params

HANDOUT = ROOT / "assignments" / "a6_pretraining_scale"
SOLUTION = ROOT / "solutions" / "a6_pretraining_scale"
A6 = suite.ASSIGNMENT
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=90.0)
SOLUTION_SRC = (SOLUTION / "pretraining.py").read_text()


def _a6_ids() -> list[str]:
    all_ids()  # loads the catalog
    import grader.catalog.a6 as cat

    src = Path(cat.__file__).read_text()
    return [mid for mid in _CATALOG if f'id="{mid}"' in src]


# ---------------------------------------------------------------- whole submissions


def test_a6_two_students_get_different_hidden_cases_and_full_marks(tmp_path):
    seeds = {}
    for sid in ("ada@uni.edu", "grace@uni.edu"):
        folder = write_submission(
            A6.code_file,
            tmp_path,
            SOLUTION_SRC,
            answer_key(A6.id).to_toml(sid),
            name=sid.split("@")[0],
        )
        report = grade_submission(folder, A6, student=sid, limits=FAST)
        assert report.score == 100, [
            (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
        ]
        seeds[sid] = report.seed
    a, b = seeds.values()
    assert a != b
    for q in A6.questions:
        if isinstance(q, CodeQuestion):
            ca = [c for c in q.cases(a) if not c.visible]
            cb = [c for c in q.cases(b) if not c.visible]
            assert repr([c.args for c in ca]) != repr([c.args for c in cb]), q.id
    # the written numbers differ too (the default variant's answers are not everyone's)
    key = answer_key("a6_pretraining_scale")
    assert key.answers("ada@uni.edu") != key.answers("grace@uni.edu")


OTHER_STYLE = """
import re
import torch


def bpe_learn(word_counts, num_merges):
    # Sennrich et al.'s style: words as space-separated strings, a regex to merge
    vocab = {" ".join(list(w) + ["</w>"]): c for w, c in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        pairs = {}
        for word, freq in vocab.items():
            syms = word.split()
            for i in range(len(syms) - 1):
                pairs[syms[i], syms[i + 1]] = pairs.get((syms[i], syms[i + 1]), 0) + freq
        if not pairs:
            break
        top = max(pairs.values())
        best = sorted(p for p in pairs if pairs[p] == top)[0]
        merges.append(best)
        pattern = re.compile(r"(?<!\\S)" + re.escape(" ".join(best)) + r"(?!\\S)")
        vocab = {pattern.sub("".join(best), w): f for w, f in vocab.items()}
    return merges


def bpe_segment(word, merges):
    syms = list(word) + ["</w>"]
    for a, b in merges:
        i, out = 0, []
        while i < len(syms):
            if i < len(syms) - 1 and syms[i] == a and syms[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(syms[i])
                i += 1
        syms = out
    return tuple(syms)


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    # one position at a time, drawing in a different order than the reference
    specials = set(int(s) for s in special_ids)
    inputs, labels = [], []
    for t in tokens.tolist():
        if t in specials or rng.random() >= p:
            inputs.append(t)
            labels.append(-100)
            continue
        labels.append(t)
        u = rng.random()
        if u < 0.8:
            inputs.append(mask_id)
        elif u < 0.9:
            inputs.append(int(rng.integers(vocab_size)))
        else:
            inputs.append(t)
    return torch.tensor(inputs), torch.tensor(labels)


def next_token_targets(tokens, pad_id):
    t = torch.as_tensor(tokens)
    targets = t[:, 1:].masked_fill(t[:, 1:] == pad_id, -100)
    return t[:, :-1], targets


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    d = d_model
    b = 1 if biases else 0
    attn = 4 * (d * d + b * d)
    mats = [(d, d_ff), (d_ff, d)] if ffn == "gelu" else [(d, d_ff), (d, d_ff), (d_ff, d)]
    ff = sum(i * o + b * o for i, o in mats)
    one_norm = 2 * d if norm == "layernorm" else d
    block = attn + ff + 2 * one_norm
    out = dict(token_embedding=vocab_size * d, position_embedding=max_positions * d,
               attention_per_block=attn, ffn_per_block=ff, norms_per_block=2 * one_norm,
               per_block=block, blocks=block * n_layers, final_norm=one_norm,
               lm_head=0 if tied_embeddings else vocab_size * d)
    out["total"] = float(sum(v for k, v in out.items() if k not in
                             ("attention_per_block", "ffn_per_block", "norms_per_block", "per_block")))
    return out


def span_corruption(tokens, spans, sentinel_ids):
    # a mask over the kept positions; the sentinels spliced in where each span starts
    tokens = torch.as_tensor(tokens)
    keep = torch.ones(len(tokens), dtype=torch.bool)
    starts = {}
    for k, (start, length) in enumerate(spans):
        keep[start:start + length] = False
        starts[start] = k
    inputs, targets = [], []
    for t in range(len(tokens)):
        if t in starts:
            inputs.append(sentinel_ids[starts[t]])
            targets.append(sentinel_ids[starts[t]])
        (inputs if keep[t] else targets).append(int(tokens[t]))
    return inputs, targets + [sentinel_ids[len(spans)]]
"""


def test_a6_other_style_torch_and_loops_gets_full_marks(tmp_path):
    code_only = dataclasses.replace(
        A6, questions=tuple(q for q in A6.questions if isinstance(q, CodeQuestion))
    )
    report = grade_submission(
        write_submission(A6.code_file, tmp_path, OTHER_STYLE),
        code_only,
        student="someone",
        limits=FAST,
    )
    assert report.score == 60, [
        (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
    ]


# ---------------------------------------------------------------- one mistake each, as a student writes it

MISTAKES = {
    "bpe-no-end-of-word/learn": (
        "a6.bpe_learn",
        "bpe-no-end-of-word",
        "corpus = {tuple(word) + (END,): n",
        "corpus = {tuple(word): n",
    ),
    "bpe-no-end-of-word/segment": (
        "a6.bpe_segment",
        "bpe-no-end-of-word",
        "symbols = tuple(word) + (END,)\n    for a, b",
        "symbols = tuple(word)\n    for a, b",
    ),
    "bpe-unweighted-pair-counts": (
        "a6.bpe_learn",
        "bpe-unweighted-pair-counts",
        "pairs[pair] += n",
        "pairs[pair] += 1",
    ),
    # Sennrich's toy BPE and minbpe: `max(pairs, key=pairs.get)`, the first pair counted wins
    "bpe-ties-first-counted": (
        "a6.bpe_learn",
        "bpe-ties-first-counted",
        "best = min(pairs, key=lambda pair: (-pairs[pair], pair))",
        "best = max(pairs, key=pairs.get)",
    ),
    # subword-nmt's learn_bpe: stop when the best pair's frequency is below --min-frequency 2
    "bpe-stops-below-two": (
        "a6.bpe_learn",
        "bpe-stops-below-two",
        "        merges.append(best)\n",
        "        if pairs[best] < 2:\n            break\n        merges.append(best)\n",
    ),
    # subword-nmt's learn_bpe / apply_bpe: "</w>" glued to the last character
    "bpe-end-of-word-glued/learn": (
        "a6.bpe_learn",
        "bpe-end-of-word-glued",
        "corpus = {tuple(word) + (END,): n",
        "corpus = {tuple(word[:-1]) + (word[-1] + END,): n",
    ),
    # subword-nmt's learn_bpe: `max(stats, key=lambda x: (stats[x], x))`, the largest pair wins
    "bpe-ties-largest-pair": (
        "a6.bpe_learn",
        "bpe-ties-largest-pair",
        "best = min(pairs, key=lambda pair: (-pairs[pair], pair))",
        "best = max(pairs, key=lambda x: (pairs[x], x))",
    ),
    "bpe-end-of-word-glued/segment": (
        "a6.bpe_segment",
        "bpe-end-of-word-glued",
        "symbols = tuple(word) + (END,)\n    for a, b",
        "symbols = tuple(word[:-1]) + (word[-1] + END,)\n    for a, b",
    ),
    "bert-mask-no-random-or-keep": (
        "a6.bert_mask",
        "bert-mask-no-random-or-keep",
        "inputs[to_mask] = mask_id\n    inputs[to_random] = random_ids[to_random]",
        "inputs[selected] = mask_id",
    ),
    "bert-labels-all-positions": (
        "a6.bert_mask",
        "bert-labels-all-positions",
        "labels = np.where(selected, tokens, -100)",
        "labels = tokens.copy()",
    ),
    "bert-masks-specials": (
        "a6.bert_mask",
        "bert-masks-specials",
        "selected = (rng.random(n) < p) & ~np.isin(tokens, list(special_ids))",
        "selected = rng.random(n) < p",
    ),
    "lm-targets-not-shifted": (
        "a6.next_token_targets",
        "lm-targets-not-shifted",
        "targets = tokens[:, 1:].copy()",
        "targets = tokens[:, :-1].copy()",
    ),
    "lm-inputs-not-truncated": (
        "a6.next_token_targets",
        "lm-inputs-not-truncated",
        "inputs = tokens[:, :-1]  # (B, T-1)",
        "inputs = tokens  # (B, T)",
    ),
    "lm-targets-padding-kept": (
        "a6.next_token_targets",
        "lm-targets-padding-kept",
        "targets[targets == pad_id] = -100",
        "pass",
    ),
    "params-lm-head-counted-when-tied": (
        "a6.transformer_parameter_count",
        "params-lm-head-counted-when-tied",
        '"lm_head": 0 if tied_embeddings else vocab_size * d',
        '"lm_head": vocab_size * d',
    ),
    "params-missing-biases": (
        "a6.transformer_parameter_count",
        "params-missing-biases",
        "return n_in * n_out + (n_out if biases else 0)",
        "return n_in * n_out",
    ),
    "params-missing-biases-attention": (
        "a6.transformer_parameter_count",
        "params-missing-biases",
        "attention = 4 * linear(d, d)  # W_Q, W_K, W_V, W_O",
        "attention = 4 * d * d  # W_Q, W_K, W_V, W_O",
    ),
    "params-missing-biases-ffn": (
        "a6.transformer_parameter_count",
        "params-missing-biases",
        'feed_forward = linear(d, d_ff) + linear(d_ff, d)\n    elif ffn == "swiglu":\n'
        "        feed_forward = 2 * linear(d, d_ff) + linear(d_ff, d)",
        'feed_forward = 2 * d * d_ff\n    elif ffn == "swiglu":\n        feed_forward = 3 * d * d_ff',
    ),
    "params-missing-norms": (
        "a6.transformer_parameter_count",
        "params-missing-norms",
        'norm_size = {"layernorm": 2 * d, "rmsnorm": d}[norm]',
        "norm_size = 0",
    ),
    "params-missing-norms-one-per-block": (
        "a6.transformer_parameter_count",
        "params-missing-norms",
        "norms = 2 * norm_size",
        "norms = norm_size",
    ),
    "params-missing-norms-final": (
        "a6.transformer_parameter_count",
        "params-missing-norms",
        '"final_norm": norm_size,',
        '"final_norm": 0,',
    ),
    "params-missing-position-embedding": (
        "a6.transformer_parameter_count",
        "params-missing-position-embedding",
        '"position_embedding": max_positions * d',
        '"position_embedding": 0',
    ),
    "params-swiglu-two-matrices": (
        "a6.transformer_parameter_count",
        "params-swiglu-two-matrices",
        "feed_forward = 2 * linear(d, d_ff) + linear(d_ff, d)",
        "feed_forward = linear(d, d_ff) + linear(d_ff, d)",
    ),
    # T5 span corruption
    "span-no-final-sentinel": (
        "a6.span_corruption",
        "span-no-final-sentinel",
        "    targets.append(int(sentinel_ids[len(spans)]))\n",
        "",
    ),
    "span-sentinels-out-of-order": (
        "a6.span_corruption",
        "span-sentinels-out-of-order",
        "    tokens = [int(t) for t in tokens]\n",
        "    tokens = [int(t) for t in tokens]\n    sentinel_ids = list(sentinel_ids)[::-1]\n",
    ),
    "span-tokens-left-in-inputs": (
        "a6.span_corruption",
        "span-tokens-left-in-inputs",
        "inputs += tokens[pos:start] + [int(sentinel_ids[k])]",
        "inputs += tokens[pos:start] + [int(sentinel_ids[k])] + tokens[start : start + length]",
    ),
}


@pytest.mark.parametrize("label", list(MISTAKES))
def test_a6_single_mistake_is_named(tmp_path, label):
    qid, mid, old, new = MISTAKES[label]
    assert SOLUTION_SRC.count(old) == 1, old
    report = grade_submission(
        write_submission(A6.code_file, tmp_path, SOLUTION_SRC.replace(old, new)),
        only(A6, qid),
        limits=FAST,
    )
    (q,) = report.questions
    assert q.misconceptions == [mid], q.feedback
    assert q.score < q.max_score
    assert mid in q.feedback


def test_a6_every_catalog_id_has_a_mistake_test():
    covered = {m[1] for m in MISTAKES.values()}
    assert set(_a6_ids()) == covered


WRONG_ANSWERS = """
per_block_formula = "12 d^2 + 4 d"
gpt2_small_total = {untied}
swiglu_ffn = {two}
bert_80_10_10 = "D"
bpe_by_hand = {bpe}
"""


def test_a6_written_wrong_forms_are_named(tmp_path):
    numbers = _variant_numbers()
    untied = params.transformer_parameter_count(*suite.GPT2_SMALL, tied_embeddings=False)["total"]
    assert untied == 124_439_808 + 50257 * 768  # slides: the tied head adds 0, an untied one V × d
    two = 2 * numbers["swiglu_d"] * numbers["swiglu_d_ff"]
    bpe = [
        f"{a} {b}"
        for a, b in suite._bpe_learn_unweighted(numbers["bpe_corpus"], numbers["bpe_num_merges"])
    ]
    text = WRONG_ANSWERS.format(
        untied=untied, two=two, bpe="[" + ", ".join(f'"{s}"' for s in bpe) + "]"
    )
    written = dataclasses.replace(
        A6, questions=tuple(q for q in A6.questions if isinstance(q, WrittenQuestion))
    )
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "answers.toml").write_text(text)
    report = grade_submission(folder, written, limits=FAST)
    named = {q.question_id: q.misconceptions for q in report.questions}
    assert named["a6.per_block_formula"] == ["params-missing-biases"]
    assert named["a6.gpt2_small_total"] == ["params-lm-head-counted-when-tied"]
    assert named["a6.swiglu_ffn"] == ["params-swiglu-two-matrices"]
    assert named["a6.bert_80_10_10"] == ["bert-mask-no-random-or-keep"]
    if bpe != [
        f"{a} {b}" for a, b in suite.bpe.bpe_learn(numbers["bpe_corpus"], numbers["bpe_num_merges"])
    ]:
        assert named["a6.bpe_by_hand"] == ["bpe-unweighted-pair-counts"]
    answered = {"a6.per_block_formula", "a6.gpt2_small_total", "a6.swiglu_ffn", "a6.bert_80_10_10"}
    assert all(q.score == 0 for q in report.questions if q.question_id in answered)


@pytest.mark.parametrize(
    ("per_block", "total"),
    [
        ("12 d^2 + 11 d", 124_439_808 - 12 * 1_536),  # one LayerNorm (2d = 1,536) per block
        ("12 d^2 + 9 d", 124_439_808 - 1_536),  # no norm in a block; no final LayerNorm
    ],
    ids=["one-per-block", "none-in-a-block-no-final"],
)
def test_a6_written_answers_missing_some_norms_are_named(tmp_path, per_block, total):
    """The notes' GPT-2 small: 124,439,808 with two LayerNorms per block and a final one."""
    written = dataclasses.replace(
        A6,
        questions=tuple(
            q for q in A6.questions if q.id in ("a6.per_block_formula", "a6.gpt2_small_total")
        ),
    )
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "answers.toml").write_text(
        f'per_block_formula = "{per_block}"\ngpt2_small_total = {total}\n'
    )
    report = grade_submission(folder, written, limits=FAST)
    for q in report.questions:
        assert q.misconceptions == ["params-missing-norms"], q.feedback
        assert q.score == 0


# ---------------------------------------------------------------- the hidden cases separate

COMPARED = [q for q in A6.questions if isinstance(q, CodeQuestion) and q.custom is None]


@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1])
def test_a6_mutants_pairwise_separated_on_hidden_cases(seed):
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


@pytest.mark.parametrize("seed", [0, 777])
def test_a6_bert_judge_names_each_mutant_and_passes_the_reference(seed):
    q = A6.question("a6.bert_mask")
    cases = q.cases(seed)
    ref = suite.judge_bert_mask(cases, [run_trusted(q.reference, c) for c in cases])
    assert ref.fraction == 1.0 and ref.misconceptions == []
    for mid, fn in q.mutants.items():
        j = suite.judge_bert_mask(cases, [run_trusted(fn, c) for c in cases])
        assert j.misconceptions == [mid] and j.fraction < 1.0, (mid, j.checks)


def test_a6_bert_judge_essentially_never_fails_a_correct_answer():
    q = A6.question("a6.bert_mask")
    for seed in range(30):
        cases = q.cases(1000 + seed)
        j = suite.judge_bert_mask(cases, [run_trusted(q.reference, c) for c in cases])
        assert j.fraction == 1.0, (seed, [c for c in j.checks if not c[1]])


def test_a6_every_catalog_id_reachable_from_a_hidden_case():
    reached = set()
    for q in A6.questions:
        if isinstance(q, CodeQuestion) and q.custom is None:
            hidden = [c for c in q.cases(0) if not c.visible]
            for mid, fn in q.mutants.items():
                if any(
                    compare(concrete(run_trusted(fn, c)), run_trusted(q.reference, c), exact=True)
                    for c in hidden
                ):
                    reached.add(mid)
        elif isinstance(q, CodeQuestion):
            reached |= set(q.mutants)  # named by the judge (test above)
        elif q.wrong_forms is not None:
            reached |= {wf.misconception for wf in q.wrong_forms(dict(_variant_numbers()))}
    assert set(_a6_ids()) <= reached


def _variant_numbers():
    from grader.course import variants

    return variants.numbers(A6.id, None)


# ---------------------------------------------------------------- outside authorities


def test_a6_visible_cases_match_the_slides_and_the_hand_worked_example():
    gpt2 = params.transformer_parameter_count(*suite.GPT2_SMALL)
    assert gpt2["per_block"] == 7_087_872 and gpt2["total"] == 124_439_808  # slides 002
    merges = suite.bpe.bpe_learn(suite.SENNRICH_CORPUS, 10)
    assert merges[:3] == [("e", "s"), ("es", "t"), ("est", "</w>")]  # README, worked by hand
    assert suite.bpe.bpe_segment("lowest", merges) == ["low", "est</w>"]


def _torch_model(V, P, d, L, d_ff, tied=True, biases=True, ffn="gelu", norm="layernorm"):
    import torch
    from torch import nn

    def Norm():
        return nn.LayerNorm(d) if norm == "layernorm" else nn.RMSNorm(d)

    with torch.device("meta"):
        m = nn.Module()
        m.wte = nn.Embedding(V, d)
        if P:
            m.wpe = nn.Embedding(P, d)
        blocks = []
        for _ in range(L):
            b = nn.Module()
            b.ln_1, b.ln_2 = Norm(), Norm()
            b.attn = nn.MultiheadAttention(d, 4, bias=biases)
            n_up = 1 if ffn == "gelu" else 2
            b.up = nn.ModuleList(nn.Linear(d, d_ff, bias=biases) for _ in range(n_up))
            b.down = nn.Linear(d_ff, d, bias=biases)
            blocks.append(b)
        m.h = nn.ModuleList(blocks)
        m.ln_f = Norm()
        m.lm_head = nn.Linear(d, V, bias=False)
        if tied:
            m.lm_head.weight = m.wte.weight
    return m


def _numel(module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("seed", [0, 4242])
def test_a6_parameter_counts_of_every_case_match_a_torch_built_model(seed):
    q = A6.question("a6.transformer_parameter_count")
    names = ("V", "P", "d", "L", "d_ff", "tied", "biases", "ffn", "norm")
    renamed = {"tied_embeddings": "tied"}
    for case in q.cases(seed):
        cfg = dict(zip(names, case.args)) | {renamed.get(k, k): v for k, v in case.kwargs.items()}
        model = _torch_model(**cfg)
        block = model.h[0]
        want = run_trusted(q.reference, case)
        assert want["total"] == _numel(model), case.name  # tied weights count once
        assert want["attention_per_block"] == _numel(block.attn), case.name
        assert want["ffn_per_block"] == _numel(block.up) + _numel(block.down), case.name
        assert want["norms_per_block"] == _numel(block.ln_1) + _numel(block.ln_2), case.name
        assert want["per_block"] == _numel(block) and want["final_norm"] == _numel(model.ln_f), (
            case.name
        )


# ---------------------------------------------------------------- the handout's public tests
