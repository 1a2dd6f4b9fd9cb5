"""Public tests for a6: the README's worked examples and simple properties. Run: python -m pytest -q"""

import numpy as np
import pretraining as P

SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
SENNRICH_MERGES = [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w"), ("e", "w"),
                   ("ew", "est</w>"), ("n", "ewest</w>"), ("low", "</w>"), ("d", "est</w>")]


def _pairs(merges):
    return [tuple(m) for m in merges]


def test_bpe_learn_worked_example():
    assert _pairs(P.bpe_learn(SENNRICH, 10)) == SENNRICH_MERGES


def test_bpe_end_of_word_is_its_own_symbol():
    # "aa" x3, "ba" x1: (a, </w>) occurs 4 times, more than (a, a) 3 times
    assert _pairs(P.bpe_learn({"aa": 3, "ba": 1}, 1)) == [("a", "</w>")]


def test_bpe_stops_early():
    assert _pairs(P.bpe_learn({"x": 3}, 5)) == [("x", "</w>")]


def test_bpe_segment_worked_examples():
    assert list(P.bpe_segment("lowest", SENNRICH_MERGES)) == ["low", "est</w>"]
    assert list(P.bpe_segment("newer", SENNRICH_MERGES)) == ["n", "ew", "e", "r", "</w>"]
    assert list(P.bpe_segment("low", [])) == ["l", "o", "w", "</w>"]


def test_bert_mask_invariants():
    rng = np.random.default_rng(0)
    tokens = rng.integers(4, 500, size=5000)
    tokens[::10] = 1  # a special token
    inputs, labels = (np.asarray(a) for a in P.bert_mask(tokens, rng, 3, 500, special_ids=(0, 1, 2, 3)))
    assert inputs.shape == labels.shape == (5000,)
    selected = labels != -100
    assert np.all(labels[selected] == tokens[selected])
    assert np.all(inputs[~selected] == tokens[~selected])
    assert not np.any(selected & (tokens == 1))
    assert 0.10 < selected[tokens != 1].mean() < 0.20
    assert 0.7 < np.mean(inputs[selected] == 3) < 0.9


def test_next_token_targets_example():
    inputs, targets = P.next_token_targets(np.array([[5, 6, 7, 0], [8, 9, 0, 0]]), 0)
    assert np.asarray(inputs).tolist() == [[5, 6, 7], [8, 9, 0]]
    assert np.asarray(targets).tolist() == [[6, 7, -100], [9, -100, -100]]


def test_gpt2_small_counts():
    c = P.transformer_parameter_count(50257, 1024, 768, 12, 3072)
    assert int(c["attention_per_block"]) == 2_362_368
    assert int(c["ffn_per_block"]) == 4_722_432
    assert int(c["per_block"]) == 7_087_872
    assert int(c["total"]) == 124_439_808
    untied = P.transformer_parameter_count(50257, 1024, 768, 12, 3072, tied_embeddings=False)
    assert int(untied["lm_head"]) == 50257 * 768


def test_span_corruption_t5_example():
    # Raffel et al. (2020), Figure 2
    words = ["Thank", "you", "for", "inviting", "me", "to", "your", "party", "last", "week", "."]
    X, Y, Z = 32099, 32098, 32097  # <extra_id_0>, <extra_id_1>, <extra_id_2>
    names = {**dict(enumerate(words)), X: "<X>", Y: "<Y>", Z: "<Z>"}
    inputs, targets = P.span_corruption(list(range(11)), [(2, 2), (8, 1)], [X, Y, Z])
    assert " ".join(names[int(i)] for i in inputs) == "Thank you <X> me to your party <Y> week ."
    assert " ".join(names[int(i)] for i in targets) == "<X> for inviting <Y> last <Z>"
