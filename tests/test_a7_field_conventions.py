"""a7 against the conventions of the implementations students copy (issue 33, item 2), and the
names those entries give (item 5).

The handout's batch loss is torch's reduction="mean"; its n-grams have one "</s>" whatever n
is; its perplexity is one number over every predicted token of every sentence, "</s>" and
unknown words included. Widely used tools differ: torch's reduction="sum", nltk.lm's
pad_both_ends (n − 1 "</s>", each predicted), Hugging Face evaluate's mean_perplexity (the mean
of per-sentence perplexities), SRILM's ppl1 (N without the "</s>") and SRILM's ppl / KenLM's
"excluding OOVs" (unknown words left out). Each is a catalog entry; its reference hook is held
here to the outside implementation itself (torch and autograd, nltk's padding and nltk.lm's
scores with SRILM's and evaluate's documented formulas on top), and a student who follows the
tool is docked and named. Controls: two conventions in one file, and a slip whose output is
inf, which supports no name.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from collections import Counter

import numpy as np
import pytest
import torch
from conftest import FAST, ROOT
from test_validity_a1a3a6 import judge

import grader.suites.a7_classification_ngrams as suite
from grader import catalog
from grader.engine.grade import grade_submission
from reference import classify as cl

if importlib.util.find_spec("nltk") is None:
    pytest.skip("nltk is not installed", allow_module_level=True)


# nltk is imported by the tests that use it: a second of import in every test process otherwise.
def pad_both_ends(sentence, n):
    from nltk.lm.preprocessing import pad_both_ends

    return pad_both_ends(sentence, n)


def nltk_ngrams(sequence, n):
    from nltk.util import ngrams

    return ngrams(sequence, n)


SOLUTION = (ROOT / "solutions" / "a7_classification_ngrams" / "classify.py").read_text()
README = (ROOT / "assignments" / "a7_classification_ngrams" / "README.md").read_text()
A7 = suite.ASSIGNMENT
CE = A7.question("a7.softmax_cross_entropy")
COUNTS = A7.question("a7.ngram_counts")
PPL = A7.question("a7.ngram_perplexity")
SEEDS = range(6)
CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat", "down"], ["a", "cat"], ["a", "dog", "ran"]]
TEST = [["the", "cat"], ["a", "dog", "sat", "down", "here"], ["the", "zebra", "ran"]]


def _student(old: str, new: str, function: str):
    """The instructor's solution with one edit, as a student would write it."""
    assert SOLUTION.count(old) == 1, old
    ns: dict = {}
    exec(compile(SOLUTION.replace(old, new), "classify.py", "exec"), ns)
    return ns[function]


# ---------------------------------------------------------------- the hooks are the tools'


def test_summed_batch_hook_is_torchs_reduction_sum():
    rng = np.random.default_rng(3)
    z, y = rng.normal(0.0, 2.0, size=(5, 4)), rng.integers(0, 4, size=5)
    t = torch.tensor(z, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(t, torch.tensor(y), reduction="sum")
    loss.backward()
    got_loss, got_grad = CE.mutants["ce-batch-summed"](z, y)
    assert got_loss == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(got_grad, t.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3])
def test_end_padding_hook_is_nltks_pad_both_ends(n):
    want = Counter(g for s in CORPUS for g in nltk_ngrams(list(pad_both_ends(s, n)), n))
    got = cl.ngram_counts(CORPUS, n, end_pad=n - 1)
    assert got == dict(want)
    if n == 3:  # the handout's single "</s>" is another set of trigrams
        assert ("cat", "</s>", "</s>") in want and cl.ngram_counts(CORPUS, 3) != dict(want)


def _nltk_model(n: int, k: float):
    grams = [cl.ngrams(cl.pad(s, n), n) for s in CORPUS]
    vocab = [w for s in CORPUS for w in cl.pad(s, n)]
    from nltk import lm

    model = lm.Laplace(n) if k == 1.0 else lm.Lidstone(k, n)
    model.fit(grams, vocab)
    return model


def _nltk_logs(model, sentence, n, end_pad=1):
    """nltk.lm's natural-log scores of a sentence's padded n-grams, and their last words."""
    tokens = cl.pad(sentence, n, end_pad=end_pad)
    grams = cl.ngrams(tokens, n)
    return [math.log(2.0) * model.logscore(g[-1], list(g[:-1])) for g in grams], [
        g[-1] for g in grams
    ]


@pytest.mark.parametrize(("n", "k"), [(2, 1.0), (3, 1.0), (3, 0.5)])
def test_perplexity_hooks_are_the_tools_formulas_on_nltks_scores(n, k):
    model = _nltk_model(n, k)
    V = len(model.vocab)
    counts = cl.ngram_counts(CORPUS, n)
    known = {w for s in CORPUS for w in s} | {"</s>"}
    per = [_nltk_logs(model, s, n) for s in TEST]
    ppl = lambda **h: cl.ngram_perplexity(counts, V, TEST, n, k, **h)  # noqa: E731
    # nltk.lm pads with n − 1 "</s>" and scores every padded n-gram
    nltk_grams = [g for s in TEST for g in nltk_ngrams(list(pad_both_ends(s, n)), n)]
    assert ppl(end_pad=n - 1) == pytest.approx(model.perplexity(nltk_grams), rel=1e-12)
    # Hugging Face evaluate's perplexity: ppl_i = exp(mean NLL of text i), mean_perplexity = mean
    mean_ppl = np.mean([math.exp(-np.mean(logs)) for logs, _ in per])
    assert ppl(per_sentence=True) == pytest.approx(mean_ppl, rel=1e-12)
    # SRILM: ppl = 10^(−logprob / (words − OOVs + sentences)), ppl1 = 10^(−logprob / (words − OOVs))
    # with logprob the log10 sum over the words and "</s>"; OOVs are not scored
    log10 = [x / math.log(10.0) for logs, _ in per for x in logs]
    words = sum(len(s) for s in TEST)
    assert ppl(count_end=False) == pytest.approx(10 ** (-sum(log10) / words), rel=1e-12)
    kept = [x / math.log(10.0) for logs, ws in per for x, w in zip(logs, ws) if w in known]
    oovs = sum(w not in known for s in TEST for w in s)
    srilm_ppl = 10 ** (-sum(kept) / (words - oovs + len(TEST)))
    assert oovs == 2 and ppl(skip_unknown=True) == pytest.approx(srilm_ppl, rel=1e-12)
    # and the handout's own: nltk's scores of every word, "</s>" and the unknown word included
    flat = [x for logs, _ in per for x in logs]
    assert ppl() == pytest.approx(math.exp(-np.mean(flat)), rel=1e-12)


# ---------------------------------------------------------------- students who follow them

TORCH_SUM = _student(
    "loss = float(-log_p[rows, Y].mean())",
    "loss = float(-log_p[rows, Y].sum())\n    B = 1  # reduction='sum': no 1/B",
    "softmax_cross_entropy",
)
NLTK_PADDING = _student(
    'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
    "return list(pad_both_ends(sentence, n))",
    "ngram_counts",
)
NLTK_PADDING_PPL = _student(
    'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
    "return list(pad_both_ends(sentence, n))",
    "ngram_perplexity",
)

NLTK_PADDING.__globals__["pad_both_ends"] = pad_both_ends
NLTK_PADDING_PPL.__globals__["pad_both_ends"] = pad_both_ends


ONE = "ngram_perplexity"


def evaluate_style_perplexity(counts, vocab_size, sentences, n, k=1.0):
    """Hugging Face evaluate's recipe: a perplexity per text, then their mean."""
    one = _student("return float(np.exp(total / N))", "return float(np.exp(total / N))", ONE)
    return float(np.mean([one(counts, vocab_size, [s], n, k) for s in sentences]))


SRILM_PPL1 = _student("            N += 1\n", "        N += len(sentence)\n", "ngram_perplexity")
SRILM_OOV = _student(
    "            p = ngram_prob(",
    "            if not any(tokens[i] in g for g in counts):\n                continue  # an OOV\n"
    "            p = ngram_prob(",
    "ngram_perplexity",
)


@pytest.mark.parametrize(
    ("question", "student", "mid"),
    [
        (CE, TORCH_SUM, "ce-batch-summed"),
        (PPL, NLTK_PADDING_PPL, "ngram-end-padded-n-minus-1"),
        (PPL, evaluate_style_perplexity, "perplexity-averaged-per-sentence"),
        (PPL, SRILM_PPL1, "perplexity-n-excludes-end"),
        (PPL, SRILM_OOV, "perplexity-skips-unknown-words"),
    ],
    ids=["torch-sum", "nltk-padding", "hf-mean-perplexity", "srilm-ppl1", "srilm-oov"],
)
def test_a_student_who_follows_the_tool_is_docked_and_named(question, student, mid):
    for seed in SEEDS:
        failed, named = judge(question, student, seed)
        assert failed >= 1 and named == [mid], (seed, failed, named)


@pytest.mark.parametrize("seed", SEEDS)
def test_nltk_padded_counts_are_docked_and_named(seed):
    cases = COUNTS.cases(seed)
    j = suite.judge_ngram_counts(cases, [NLTK_PADDING(*c.args) for c in cases])
    assert j.fraction < 1.0 and j.misconceptions == ["ngram-end-padded-n-minus-1"]
    bigrams = [c for c in cases if c.args[1] == 2]  # one "</s>" is n − 1 of them: right
    assert suite.judge_ngram_counts(bigrams, [NLTK_PADDING(*c.args) for c in bigrams]).fraction == 1


def test_the_entries_and_the_handout_say_which_rule_the_handout_wants():
    assert '**one** `"</s>"`' in README and "pad_both_ends" in README
    assert "mean_perplexity" in README and "ppl1" in README and "excluding OOVs" in README
    assert 'reduction="mean"' in README
    for mid, tool, rule in [
        ("ce-batch-summed", 'reduction=\\"sum\\"', "the mean"),
        ("ngram-end-padded-n-minus-1", "pad_both_ends", 'ONE "</s>"'),
        ("perplexity-averaged-per-sentence", "mean_perplexity", "all the predicted tokens"),
        ("perplexity-n-excludes-end", "ppl1", "the same tokens are in the sum and in N"),
        ("perplexity-skips-unknown-words", "SRILM", "every word of a test sentence"),
    ]:
        text = catalog.get(mid).explanation
        assert tool.replace("\\", "") in text and rule in text, mid


def test_an_evaluate_style_file_is_named_when_graded(tmp_path):
    """End to end, in the sandbox: the solution with its perplexity averaged per sentence."""
    source = SOLUTION.replace(
        "    total, N = 0.0, 0\n    for sentence in sentences:\n",
        "    if len(sentences) > 1:\n"
        "        return float(np.mean([ngram_perplexity(counts, vocab_size, [s], n, k)\n"
        "                              for s in sentences]))\n"
        "    total, N = 0.0, 0\n    for sentence in sentences:\n",
    )
    assert source != SOLUTION
    folder = tmp_path / "eve"
    folder.mkdir()
    (folder / "classify.py").write_text(source)
    only = dataclasses.replace(A7, questions=(PPL,))
    (q,) = grade_submission(folder, only, student="eve@uni.edu", limits=FAST).questions
    assert q.score < q.max_score
    assert q.misconceptions == ["perplexity-averaged-per-sentence"]


# ---------------------------------------------------------------- names: controls (item 5)


PAIRS = {
    "ppl1+per-sentence": (
        ["perplexity-averaged-per-sentence", "perplexity-n-excludes-end"],
        [
            ("            N += 1\n", '            N += tokens[i] != "</s>"\n'),
            (
                "    total, N = 0.0, 0\n    for sentence in sentences:\n",
                "    if len(sentences) > 1:\n"
                "        return float(np.mean([ngram_perplexity(counts, vocab_size, [s], n, k)\n"
                "                              for s in sentences]))\n"
                "    total, N = 0.0, 0\n    for sentence in sentences:\n",
            ),
        ],
    ),
    "nltk-padding+base-2": (
        ["ngram-end-padded-n-minus-1", "perplexity-base-2"],
        [
            (
                'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
                'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"] * (n - 1)',
            ),
            ("return float(np.exp(total / N))", "return float(2 ** (total / N))"),
        ],
    ),
    "oov+ppl1": (
        ["perplexity-n-excludes-end", "perplexity-skips-unknown-words"],
        [
            ("            N += 1\n", '            N += tokens[i] != "</s>"\n'),
            (
                "            p = ngram_prob(",
                "            if not any(tokens[i] in g for g in counts):\n"
                "                continue\n            p = ngram_prob(",
            ),
        ],
    ),
}


@pytest.mark.parametrize("label", sorted(PAIRS))
def test_two_conventions_in_one_file_are_named_together(tmp_path, label):
    """Two of the tools' conventions at once: neither alone reproduces the output; the engine's
    combinations of the question's own mistakes (partials of the reference) name both."""
    ids, edits = PAIRS[label]
    source = SOLUTION
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    folder = tmp_path / "pat"
    folder.mkdir()
    (folder / "classify.py").write_text(source)
    only = dataclasses.replace(A7, questions=(PPL,))
    (q,) = grade_submission(folder, only, student="pat@uni.edu", limits=FAST).questions
    assert q.score < q.max_score
    assert sorted(q.misconceptions) == sorted(ids), q.feedback


def test_an_infinite_perplexity_supports_no_name():
    """k left out of the numerator: an unseen n-gram has probability 0 and the perplexity is
    inf; no catalogued mistake makes it inf there, so nothing is named."""
    zero_k = _student(
        "return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)",
        "return counts.get(context + (word,), 0) / (c_context + k * vocab_size)",
        "ngram_perplexity",
    )
    for seed in SEEDS:
        failed, named = judge(PPL, zero_k, seed)
        assert failed >= 1 and named == [], (seed, named)
