"""a5_shapes_debugging: the solution scores 100, the handout 0, every catalog mistake is named.

Gradings spawn a torch worker each (a few seconds), so the student-style mistakes are
grouped: each module below holds at most one mistake per function and is graded on the
code questions only; every question must name exactly its planted id.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT, answer_key

from grader import catalog
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted, trusted_mutants
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from grader.suites import a5_shapes_debugging as suite

HANDOUT = ROOT / "assignments" / "a5_shapes_debugging"
SOLUTION = ROOT / "solutions" / "a5_shapes_debugging"
A = suite.ASSIGNMENT
CODE_ONLY = dataclasses.replace(A, questions=(*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS))
A5_IDS = (
    "heads-reshape-without-transpose",
    "merge-heads-without-transpose",
    "mask-zero-fill",
    "mask-inverted",
    "lm-loss-not-shifted",
    "lm-loss-includes-padding",
    "pool-includes-padding",
    "shape-scores-missing-heads",
    "shape-ln-stats-per-feature",
    "shape-bn-stats-per-token",
    "pool-divides-by-T",
    "task-mask-causal-for-bidirectional-task",
    "task-mask-not-causal",
    "task-mask-padding-ignored",
    "task-mask-empty-padded-rows",
    "loss-positions-through-last-token",
    "loss-positions-include-padding",
    "loss-positions-classification-per-token",
)
STUDENTS = ("alice@example.edu", "bob@example.edu")


def _folder(tmp_path: Path, name: str, code: str | None, answers: str | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    if code is not None:
        (folder / "fixed.py").write_text(code)
    if answers is not None:
        (folder / "answers.toml").write_text(answers)
    return folder


def _by_function(report) -> dict:
    return {q.function: q for q in report.questions if q.kind == "code"}


# ---------------------------------------------------------------- the assignment's shape


def test_a5_assignment_has_100_points_every_graded_function_and_torch_inputs():
    assert A.total_points == 100 and A.preload_torch and A.code_file == "fixed.py"
    code = [q for q in A.questions if isinstance(q, CodeQuestion)]
    assert [q.function for q in code] == [
        "split_heads",
        "merge_heads",
        "masked_softmax",
        "causal_lm_loss",
        "masked_mean_pool",
        "block_shapes",
        "task_mask",
        "task_loss_positions",
    ]
    assert all(q.torch_inputs for q in code)
    assert all(
        any(c.visible for c in q.cases(0)) and any(not c.visible for c in q.cases(0)) for q in code
    )
    for mid in A5_IDS:
        catalog.get(mid)  # every id has a catalog entry


def test_a5_suite_imports_without_torch():
    code = "import sys, grader.suites.a5_shapes_debugging; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ---------------------------------------------------------------- references against torch itself


def test_a5_references_agree_with_torch_on_the_hidden_cases():
    q = {x.function: x for x in (*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS)}
    for case in q["causal_lm_loss"].cases(0):
        logits, tokens, pad_id = (
            torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in case.args
        )
        V = logits.shape[-1]
        want = F.cross_entropy(
            logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), ignore_index=pad_id
        )
        assert run_trusted(q["causal_lm_loss"].reference, case) == pytest.approx(float(want))
    for case in q["masked_softmax"].cases(0):
        s, m = (torch.from_numpy(a) for a in case.args)
        want = torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1).numpy()
        np.testing.assert_allclose(
            run_trusted(q["masked_softmax"].reference, case), want, atol=1e-12
        )
    for case in q["masked_mean_pool"].cases(0):
        H, lengths = case.args
        want = np.stack([H[b, : lengths[b]].mean(axis=0) for b in range(len(lengths))])
        np.testing.assert_allclose(run_trusted(q["masked_mean_pool"].reference, case), want)
    for case in q["split_heads"].cases(0):
        x, h = case.args
        want = torch.from_numpy(x).unflatten(-1, (h, -1)).permute(0, 2, 1, 3).numpy()
        np.testing.assert_array_equal(run_trusted(q["split_heads"].reference, case), want)
    # notes §6 walkthrough: (2,4,8) -> (2,2,4,4) scores (2,2,4,4); LN stats (B, T), BN stats (d,)
    walk = run_trusted(q["block_shapes"].reference, q["block_shapes"].cases(0)[0])
    assert walk["q_heads"] == walk["scores"] == (2, 2, 4, 4) and walk["ffn_hidden"] == (2, 4, 32)
    assert walk["ln_stats"] == (2, 4) and walk["bn_stats"] == (8,)
    for case in q["task_mask"].cases(0):  # torch's key padding and causal masks, inverted
        task, lengths, T = case.args
        ignore = torch.arange(T)[None, :] >= torch.from_numpy(lengths)[:, None]
        want = ~ignore[:, None, :].expand(-1, T, -1)
        if task == "next_token":
            want = want & ~(torch.nn.Transformer.generate_square_subsequent_mask(T) < 0)
        np.testing.assert_array_equal(run_trusted(q["task_mask"].reference, case), want.numpy())
    for case in q["task_loss_positions"].cases(0):  # the LM loss's targets (a6 convention)
        task, lengths, T = case.args
        got = run_trusted(q["task_loss_positions"].reference, case)
        if task == "next_token":
            tokens = np.where(np.arange(T)[None, :] < lengths[:, None], 7, 0)
            _, targets = suite.masking.next_token_targets(tokens, pad_id=0)
            np.testing.assert_array_equal(got[:, :-1], targets != suite.masking.IGNORE_INDEX)
        elif task == "classification":
            assert not got.any()
        else:
            np.testing.assert_array_equal(got.sum(axis=1), lengths)


# ---------------------------------------------------------------- mutants separate


# A task's mistake shows only on the tasks it concerns (a causal mask for tagging is right for
# next-token prediction): those questions need it on some hidden case, the others on every one.
PER_TASK = ("task_mask", "task_loss_positions")


# mistakes that show only on a domain edge (the exp overflows only for scores about 800)
EDGE_ONLY = {("masked_softmax", "softmax-unstable")}


def test_a5_mutants_differ_from_the_reference_and_from_each_other_on_hidden_cases():
    for q in (*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS):
        hidden = [c for c in q.cases(0) if not c.visible]
        mutants = trusted_mutants(q.mutants)
        outputs = {mid: [] for mid in mutants}
        shows = dict.fromkeys(mutants, False)
        for case in hidden:
            want = run_trusted(q.reference, case)
            for mid, f in mutants.items():
                got = concrete(f(*case.args, **case.kwargs))  # an AnyOf as its first option
                outputs[mid].append(got)
                differs = bool(compare(got, want, q.tolerance, exact=q.integer))
                shows[mid] |= differs
                edge = "domain edge" in case.name  # an edge is drawn for its own slips
                assert (
                    differs or q.function in PER_TASK or (q.function, mid) in EDGE_ONLY or edge
                ), f"{q.id}: {mid} = reference on {case.name}"
                if (q.function, mid) in EDGE_ONLY and "domain edge" in case.name:
                    assert differs, f"{q.id}: {mid} = reference on its edge, {case.name}"
        assert all(shows.values()), (q.id, shows)
        ids = list(outputs)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                assert any(
                    compare(x, y, q.tolerance, exact=q.integer)
                    for x, y in zip(outputs[a], outputs[b])
                ), f"{q.id}: {a} and {b} agree on every hidden case"


def test_a5_every_catalog_id_is_reachable_from_a_hidden_case_of_its_question():
    reach = {
        mid: q.function for q in (*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS) for mid in q.mutants
    }
    assert set(A5_IDS) <= set(reach)
    # different students get different hidden numbers
    for q in (*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS):
        a, b = (q.cases(suite_seed) for suite_seed in (11, 22))
        hidden = [i for i, c in enumerate(a) if not c.visible]
        assert any(repr(a[i].args) != repr(b[i].args) for i in hidden), q.id


# ---------------------------------------------------------------- whole submissions

NUMPY_STYLE = """
import numpy as np

def _a(t):
    return t.numpy().astype(np.float32)

def split_heads(x, n_heads):
    x = _a(x)
    B, T, d = x.shape
    d_h = d // n_heads
    out = np.zeros((B, n_heads, T, d_h), dtype=np.float32)
    for i in range(n_heads):
        out[:, i] = x[:, :, i * d_h:(i + 1) * d_h]
    return out

def merge_heads(x):
    x = _a(x)
    return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)

def masked_softmax(scores, mask):
    s = _a(scores)
    m = np.broadcast_to(mask.numpy(), s.shape)
    s = np.where(m, s, -1e30)
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * m
    return e / e.sum(axis=-1, keepdims=True)

def causal_lm_loss(logits, tokens, pad_id):
    z, tok = _a(logits), tokens.numpy()
    total, count = 0.0, 0
    B, T, V = z.shape
    for b in range(B):
        for t in range(T - 1):
            y = tok[b, t + 1]
            if y == pad_id:
                continue
            row = z[b, t] - z[b, t].max()
            total += float(np.log(np.exp(row).sum()) - row[y])
            count += 1
    return total / count

def masked_mean_pool(H, lengths):
    H = _a(H)
    return np.stack([H[b, :int(n)].mean(axis=0) for b, n in enumerate(lengths.tolist())])

def block_shapes(B, T, d, n_heads, d_ff):
    d_h = d // n_heads
    heads, per_head_scores, tok = (B, n_heads, T, d_h), (B, n_heads, T, T), (B, T, d)
    return dict(input=tok, q=tok, q_heads=heads, scores=per_head_scores, weights=per_head_scores,
                context_heads=heads, context=tok, attn_out=tok, ffn_hidden=(B, T, d_ff), ffn_out=tok,
                block_out=tok, ln_stats=(B, T), bn_stats=(d,))

def task_mask(task, lengths, T):
    out = np.zeros((len(lengths), T, T), dtype=bool)
    for b, n in enumerate(lengths.tolist()):
        for t in range(T):
            for s in range(T):
                out[b, t, s] = s < n and (task != "next_token" or s <= t)
    return out

def task_loss_positions(task, lengths, T):
    n = lengths.numpy()[:, None]
    t = np.arange(T)[None, :]
    return {"tagging": t < n, "next_token": t <= n - 2, "classification": t < 0 * n}[task]
"""


def test_a5_two_students_full_marks_one_in_numpy_float32_style(tmp_path):
    sol = (SOLUTION / "fixed.py").read_text()
    for student, code in zip(STUDENTS, (sol, NUMPY_STYLE)):
        folder = _folder(tmp_path, student.split("@")[0], code, answer_key(A.id).to_toml(student))
        report = grade_submission(folder, A, student=student)
        assert report.score == 100, [
            (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
        ]
    # the two students' written numbers differ, so their keys differ
    key = answer_key("a5_shapes_debugging")
    assert key.answers(STUDENTS[0])["var_scores"] != key.answers(STUDENTS[1])["var_scores"]


# ---------------------------------------------------------------- student-style mistakes

SOL = (SOLUTION / "fixed.py").read_text()


def _replace(source: str, function: str, body: str) -> str:
    """The solution with one function's body replaced by a student's."""
    start = source.index(f"def {function}(")
    doc_end = source.index('"""', source.index('"""', start) + 3) + 3
    end = source.find("\ndef ", doc_end)
    end = len(source) if end < 0 else end + 1
    return source[:doc_end] + "\n" + body.rstrip() + "\n\n" + source[end:]


MISTAKES_1 = {  # buggy.py's own planted bugs are a group of their own (graded below)
    "masked_softmax": (
        "mask-inverted",
        """
    scores = scores.masked_fill(mask, float("-inf"))  # True read as "hide"
    return torch.softmax(scores, dim=-1)
""",
    ),
    "causal_lm_loss": (
        "lm-loss-not-shifted",
        """
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1), ignore_index=pad_id)
""",
    ),
    "masked_mean_pool": (
        "pool-divides-by-T",
        """
    B, T, d = H.shape
    m = (torch.arange(T)[None, :] < lengths[:, None]).to(H.dtype)
    return (H * m[:, :, None]).sum(dim=1) / T
""",
    ),
    "block_shapes": (
        "shape-ln-stats-per-feature",
        """
    d_h = d // n_heads
    tok = (B, T, d)
    return {"input": tok, "q": tok, "q_heads": (B, n_heads, T, d_h), "scores": (B, n_heads, T, T),
            "weights": (B, n_heads, T, T), "context_heads": (B, n_heads, T, d_h), "context": tok,
            "attn_out": tok, "ffn_hidden": (B, T, d_ff), "ffn_out": tok, "block_out": tok,
            "ln_stats": (d,), "bn_stats": (d,)}
""",
    ),
    "split_heads": (
        "heads-reshape-without-transpose",
        """
    B, T, d = x.shape
    return x.contiguous().view(B, n_heads, T, d // n_heads)
""",
    ),
    "task_mask": (
        "task-mask-causal-for-bidirectional-task",
        """
    real = torch.arange(T)[None, :] < lengths[:, None]
    return real[:, None, :] & torch.ones(T, T, dtype=torch.bool).tril()  # causal for every task
""",
    ),
    "task_loss_positions": (
        "loss-positions-through-last-token",
        """
    t = torch.arange(T)[None, :]
    if task == "classification":
        return torch.zeros(len(lengths), T, dtype=torch.bool)
    return t < lengths[:, None]  # next-token: every real position
""",
    ),
}
MISTAKES_2 = {
    "block_shapes": (
        "shape-bn-stats-per-token",
        """
    d_h = d // n_heads
    tok = (B, T, d)
    return {"input": tok, "q": tok, "q_heads": (B, n_heads, T, d_h), "scores": (B, n_heads, T, T),
            "weights": (B, n_heads, T, T), "context_heads": (B, n_heads, T, d_h), "context": tok,
            "attn_out": tok, "ffn_hidden": (B, T, d_ff), "ffn_out": tok, "block_out": tok,
            "ln_stats": (B, T), "bn_stats": (B, T)}
""",
    ),
    "merge_heads": (
        "merge-heads-without-transpose",
        """
    B, h, T, d_h = x.shape
    return x.reshape(B, T, h * d_h)
""",
    ),
    "masked_softmax": (
        "mask-zero-fill",
        """
    return torch.softmax(torch.where(mask, scores, torch.zeros_like(scores)), dim=-1)
""",
    ),
    "causal_lm_loss": (
        "lm-loss-includes-padding",
        """
    B, T, V = logits.shape
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    return -logp.gather(-1, tokens[:, 1:, None]).mean()
""",
    ),
    "task_mask": (
        "task-mask-not-causal",
        """
    real = torch.arange(T)[None, :] < lengths[:, None]
    return real[:, None, :].expand(-1, T, -1)  # padding only, for every task
""",
    ),
    "task_loss_positions": (
        "loss-positions-classification-per-token",
        """
    t = torch.arange(T)[None, :]
    if task == "next_token":
        return t < lengths[:, None] - 1
    return t < lengths[:, None]  # classification read at every real token
""",
    ),
}
MISTAKES_3 = {
    "task_mask": (
        "task-mask-padding-ignored",
        """
    mask = torch.ones(len(lengths), T, T, dtype=torch.bool)
    if task == "next_token":
        mask = mask & torch.ones(T, T, dtype=torch.bool).tril()
    return mask
""",
    ),
    "task_loss_positions": (
        "loss-positions-include-padding",
        """
    B = len(lengths)
    if task == "classification":
        return torch.zeros(B, T, dtype=torch.bool)
    read = torch.ones(B, T, dtype=torch.bool)
    if task == "next_token":
        read[:, -1] = False
    return read
""",
    ),
}
MISTAKES_4 = {
    "task_mask": (
        "task-mask-empty-padded-rows",
        """
    real = torch.arange(T)[None, :] < lengths[:, None]
    mask = real[:, :, None] & real[:, None, :]
    if task == "next_token":
        mask = mask & torch.ones(T, T, dtype=torch.bool).tril()
    return mask
""",
    ),
}
MISTAKES_5 = {  # the conventions of widely used code the handout excludes (issue 33)
    "causal_lm_loss": (
        "lm-loss-mean-per-sequence",
        """
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    y = tokens[:, 1:]
    nll = -logp.gather(-1, y[..., None])[..., 0]  # (B, T-1)
    keep = (y != pad_id).to(nll.dtype)
    return ((nll * keep).sum(dim=1) / keep.sum(dim=1)).mean()  # per sequence, then the batch
""",
    ),
    "masked_softmax": (
        "softmax-unstable",
        """
    e = torch.exp(scores) * mask  # no max shift
    return e / e.sum(dim=-1, keepdim=True)
""",
    ),
}
MISTAKES_6 = {
    "causal_lm_loss": (
        "lm-loss-summed",
        """
    V = logits.shape[-1]
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), ignore_index=pad_id, reduction="sum"
    )
""",
    ),
}
BUGGY_PLANTED = {  # what buggy.py's planted bugs must be named
    "split_heads": "heads-reshape-without-transpose",
    "merge_heads": "merge-heads-without-transpose",
    "masked_softmax": "mask-zero-fill",
    "causal_lm_loss": "lm-loss-includes-padding",
    "masked_mean_pool": "pool-includes-padding",
    "block_shapes": "shape-scores-missing-heads",
}


GROUPS = {
    "mistakes-1": MISTAKES_1,
    "mistakes-2": MISTAKES_2,
    "mistakes-3": MISTAKES_3,
    "mistakes-4": MISTAKES_4,
    "mistakes-5": MISTAKES_5,
    "mistakes-6": MISTAKES_6,
}


@pytest.mark.parametrize("group", [*GROUPS, "buggy.py"])
def test_a5_student_style_mistakes_are_named_exactly(tmp_path, group):
    if group == "buggy.py":
        code, expected = (HANDOUT / "buggy.py").read_text(), BUGGY_PLANTED
    else:
        mistakes = GROUPS[group]
        code = SOL
        for fn, (_, body) in mistakes.items():
            code = _replace(code, fn, body)
        expected = {fn: mid for fn, (mid, _) in mistakes.items()}
    report = grade_submission(_folder(tmp_path, group, code), CODE_ONLY)
    results = _by_function(report)
    if group == "buggy.py":  # buggy.py holds the six functions to repair, not the task ones
        results = {fn: q for fn, q in results.items() if f"def {fn}(" in code}
    for fn, q in results.items():
        if fn in expected:
            assert q.misconceptions == [expected[fn]], (fn, q.feedback)
            assert q.score < q.max_score
        else:
            assert q.score == q.max_score and not q.misconceptions, (fn, q.feedback)


def test_a5_every_a5_id_is_covered_by_a_student_style_module():
    covered = {mid for group in GROUPS.values() for mid, _ in group.values()}
    assert covered | set(BUGGY_PLANTED.values()) >= set(A5_IDS)


# ---------------------------------------------------------------- written wrong forms


def test_a5_written_wrong_forms_name_the_shape_mistakes(tmp_path):
    written = tuple(q for q in A.questions if isinstance(q, WrittenQuestion))
    answers = answer_key(A.id).to_toml(None)
    wrong = {  # notes §6 walkthrough B=2, T=4, d=8, h=2: the known wrong shapes
        "walk_ln_stats": ("[8]", "shape-ln-stats-per-feature"),
        "walk_bn_stats": ('"(2, 4)"', "shape-bn-stats-per-token"),
        "walk_scores": ("[2, 4, 4]", "shape-scores-missing-heads"),
        "var_q_heads": (
            "[3, 11, 12, 16]",
            "heads-reshape-without-transpose",
        ),  # default variant: B=3 T=11 h=12
        "axis_layer_norm": ('"A, B"', "shape-ln-stats-per-feature"),
        "axis_batch_norm": ('"C"', "shape-bn-stats-per-token"),
    }
    lines = [line for line in answers.splitlines() if line.split(" = ")[0] not in wrong]
    lines += [f"{k} = {v}" for k, (v, _) in wrong.items()]
    folder = _folder(tmp_path, "written", None, "\n".join(lines) + "\n")
    report = grade_submission(folder, dataclasses.replace(A, code_file=None, questions=written))
    by_key = {q.question_id.split(".", 1)[1]: q for q in report.questions}
    for key, (_, mid) in wrong.items():
        assert by_key[key].score == 0 and by_key[key].misconceptions == [mid], (
            key,
            by_key[key].feedback,
        )
    assert report.score == 37 - sum(
        q.max_score for q in by_key.values() if q.question_id.split(".", 1)[1] in wrong
    )


# ---------------------------------------------------------------- public tests


def test_a5_visibility_questions_are_per_student_and_name_their_mistakes(tmp_path):
    """The tasks come from the variant key; a causal mask for a bidirectional task, a mask
    without the causal part, and a loss read at padding are named."""
    from grader.course import variants

    tasks = {k: variants.numbers(A.id, k) for k in (None, *STUDENTS, "carol@example.edu")}
    assert len({(tuple(n["mask_tasks"]), n["loss_task"]) for n in tasks.values()}) > 1
    qs = {q.key: q for q in suite.VISIBILITY_QUESTIONS}
    expected = {"tagging": "A", "next_token": "D", "classification": "C", "decoder": "B"}
    for n in tasks.values():  # the slides' rules, written out here once more
        assert qs["mask_task_1"].expected(n) == expected[n["mask_tasks"][0]]
    forms = {
        ("next_token", "C"): "task-mask-not-causal",
        ("next_token", "B"): "task-mask-padding-ignored",
        ("classification", "D"): "task-mask-causal-for-bidirectional-task",
    }
    numbers = {"mask_tasks": ["next_token", "classification"], "loss_task": "next_token"}
    found = {
        (numbers["mask_tasks"][i], f.answer): f.misconception
        for i, key in enumerate(("mask_task_1", "mask_task_2"))
        for f in qs[key].wrong_forms(numbers)
    }
    assert forms.items() <= found.items()
    loss = {f.answer: f.misconception for f in qs["loss_task"].wrong_forms(numbers)}
    assert loss == {
        "A": "loss-positions-through-last-token",
        "D": "loss-positions-include-padding",
    }
    # graded: a wrong letter for the default variant's tasks is named
    keys = answer_key("a5_shapes_debugging")
    n = variants.numbers(A.id, None)
    wrong_letter = {"tagging": "B", "decoder": "A", "next_token": "C", "classification": "D"}
    answers = dict(keys.answers(None), mask_task_1=wrong_letter[n["mask_tasks"][0]])
    text = "\n".join(f"{k} = {keys._toml(v)}" for k, v in answers.items()) + "\n"
    written = tuple(q for q in A.questions if isinstance(q, WrittenQuestion))
    report = grade_submission(
        _folder(tmp_path, "vis", None, text),
        dataclasses.replace(A, code_file=None, questions=written),
    )
    (q,) = [r for r in report.questions if r.question_id == "a5.mask_task_1"]
    assert q.score == 0 and len(q.misconceptions) == 1
