"""Public tests for A4: the slides' microscopes and simple properties. Run: pytest -q

Passing these does not guarantee full marks: the grader also runs hidden cases (batches,
several heads, masks, pre- and post-norm, a decoder with a memory of another length).
"""

import numpy as np
import transformer as tf

ATOL = 5e-5  # the slides round to 4 decimals

# slides 001, Part 3: the/cat/sleeps (T=3, D=4, d_k=d_v=2)
X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
W_Q1 = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0]])
W_K1 = np.array([[0.0, 0, 1, 0], [0, 0, 0, 1]])
W_V1 = np.array([[1.0, 0, 1, 0], [0, 1, 0, 2]])
W_V2 = np.array([[0.0, 1, 1, 0], [1, 0, 0, -1]])
W_O = np.array([[1.0, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, 1]])

# slides 001, Part 4: the complete block microscope
H = np.array([[1.0, 0, -1, 2], [0, 2, 1, -1], [2, 1, 0, 1]])
BLOCK = {
    "W_Q": np.array([[1, 0, 0.5, 0], [0, 1, 0, 0.5]]),
    "W_K": np.array([[0.5, 0, 1, 0], [0, 0.5, 0, 1]]),
    "W_V": np.array([[1.0, 0, 0, 0], [0, 0, 1, 0]]),
    "W_O": np.array([[1.0, 0], [0, 1], [0.5, 0], [0, 0.5]]),
    "ln1_gamma": np.ones(4), "ln1_beta": np.zeros(4), "ln2_gamma": np.ones(4), "ln2_beta": np.zeros(4),
    "W1": np.array([[1, 0, -0.5, 0], [0, 1, 0, 0.5], [0.5, -0.5, 0.5, 0]]),
    "b1": np.array([0, 0.1, -0.1]),
    "W2": np.array([[0.5, 0, 0.2], [0, 0.5, -0.2], [0.3, -0.1, 0.1], [-0.2, 0.2, 0.4]]),
    "b2": np.array([0, -0.05, 0.05, 0]),
}


def arr(x):
    """Your return value as a float64 numpy array (works for numpy, torch and lists)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def test_attention_microscope():
    out, w = tf.scaled_dot_product_attention(X @ W_Q1.T, X @ W_K1.T, X @ W_V1.T)
    np.testing.assert_allclose(arr(w), [[0.5035, 0.2483, 0.2483], [0.2483, 0.5035, 0.2483],
                                        [0.4011, 0.4011, 0.1978]], atol=ATOL)
    np.testing.assert_allclose(arr(out), [[1.2552, 0.9930], [0.7448, 1.7587], [1.0000, 1.4011]], atol=ATOL)


def test_causal_row_of_the_microscope():
    out, w = tf.scaled_dot_product_attention(X @ W_Q1.T, X @ W_K1.T, X @ W_V1.T, tf.causal_mask(3))
    np.testing.assert_allclose(arr(w)[1], [0.3302, 0.6698, 0.0], atol=ATOL)
    np.testing.assert_allclose(arr(out)[1], [0.6605, 2.0093], atol=ATOL)
    assert arr(w)[0, 1] == 0 and arr(w)[0, 2] == 0  # masked weights exactly 0


def test_masks():
    np.testing.assert_array_equal(arr(tf.causal_mask(3)), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(arr(tf.padding_mask(np.array([3, 1]), 3)), [[1, 1, 1], [1, 0, 0]])


def test_two_head_microscope():
    W_Q = np.vstack([W_Q1, W_K1])
    W_K = np.vstack([W_K1, W_Q1])
    W_V = np.vstack([W_V1, W_V2])
    out = arr(tf.multi_head_attention(X, W_Q, W_K, W_V, W_O, 2))
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out[1], [1.2448, 1.8576, 1.3724, 1.0771], atol=ATOL)


def test_layer_norm_microscope_and_stats():
    ln = arr(tf.layer_norm(H, np.ones(4), np.zeros(4)))
    np.testing.assert_allclose(ln[0], [0.4472, -0.4472, -1.3416, 1.3416], atol=ATOL)
    np.testing.assert_allclose(ln[2], [1.4142, 0.0, -1.4142, 0.0], atol=ATOL)
    mean, var = tf.layer_norm_stats(H[None])
    np.testing.assert_allclose(arr(mean), [[0.5, 0.5, 1.0]])
    np.testing.assert_allclose(arr(var), [[1.25, 1.25, 0.5]])
    mean, var = tf.batch_norm_stats(H[None])
    assert arr(mean).shape == (4,) and arr(var).shape == (4,)
    np.testing.assert_allclose(arr(mean), [1.0, 1.0, 0.0, 2 / 3])


def test_rms_norm_has_unit_root_mean_square():
    y = arr(tf.rms_norm(H, np.ones(4)))
    np.testing.assert_allclose(np.sqrt(np.mean(y**2, axis=-1)), 1.0, atol=1e-5)


def test_feed_forward_shapes_and_relu():
    y = arr(tf.feed_forward(H, BLOCK["W1"], BLOCK["b1"], BLOCK["W2"], BLOCK["b2"]))
    assert y.shape == (3, 4)
    W = np.eye(2)
    np.testing.assert_allclose(arr(tf.feed_forward(np.array([[-1.0, 2.0]]), W, np.zeros(2), W, np.zeros(2))),
                               [[0.0, 2.0]])
    g = arr(tf.feed_forward(np.array([[1.0]]), np.eye(1), np.zeros(1), np.eye(1), np.zeros(1), "gelu"))
    np.testing.assert_allclose(g, [[0.8413447460685429]], rtol=1e-6)  # GELU(1) = Phi(1)


def test_swiglu_one_token():
    y = arr(tf.swiglu_ffn(np.array([1.0, 2.0]), np.eye(2), np.eye(2), np.eye(2)))
    swish = np.array([1.0, 2.0]) / (1 + np.exp(-np.array([1.0, 2.0])))
    np.testing.assert_allclose(y, swish * np.array([1.0, 2.0]), rtol=1e-6)


def test_sinusoidal_positions_small():
    P = arr(tf.sinusoidal_positions(3, 4))
    assert P.shape == (3, 4)
    np.testing.assert_allclose(P[0], [0, 1, 0, 1], atol=1e-12)
    np.testing.assert_allclose(P[1], [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)], atol=1e-7)


def test_encoder_block_microscope():
    out = arr(tf.encoder_block(H, BLOCK, 1, "pre"))
    np.testing.assert_allclose(out, [[2.3595, -1.0547, -0.1974, 1.4428], [0.5963, 0.8824, 1.3481, -1.4556],
                                     [3.4916, 0.3136, 0.9027, 0.5284]], atol=ATOL)


def test_decoder_block_shape_and_causality():
    rng = np.random.default_rng(0)
    p = {k: v for k, v in BLOCK.items()}
    p.update({"C_Q": BLOCK["W_Q"], "C_K": BLOCK["W_K"], "C_V": BLOCK["W_V"], "C_O": BLOCK["W_O"],
              "ln3_gamma": np.ones(4), "ln3_beta": np.zeros(4)})
    Y, M = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    out = arr(tf.decoder_block(Y, M, p, 1))
    assert out.shape == (3, 4)
    Y2 = Y.copy()
    Y2[2] += 1.0  # changing the last token must not change earlier positions
    np.testing.assert_allclose(arr(tf.decoder_block(Y2, M, p, 1))[:2], out[:2], atol=1e-6)


# ---------------------------------------------------------------- RoPE and the complete forward pass (Lecture 7)


def test_rope_turns_each_pair_by_t_radians_when_d_is_2():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    want = [[1, 0], [np.cos(1), np.sin(1)], [np.cos(2), np.sin(2)], [-np.sin(3), np.cos(3)]]
    np.testing.assert_allclose(arr(tf.apply_rope(X)), want, atol=1e-6)


def test_rope_scores_depend_only_on_the_offset():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=8), rng.normal(size=8)
    Rq, Rk = arr(tf.apply_rope(np.tile(q, (6, 1)))), arr(tf.apply_rope(np.tile(k, (6, 1))))
    assert np.isclose(Rq[3] @ Rk[1], Rq[4] @ Rk[2]) and np.isclose(Rq[5] @ Rk[5], q @ k)


def _tiny_gpt(rng, V=5, d=4, untied=False):
    def block():
        return {"W_Q": rng.normal(size=(d, d)), "W_K": rng.normal(size=(d, d)), "W_V": rng.normal(size=(d, d)),
                "W_O": rng.normal(size=(d, d)) / 2, "ln1_gamma": np.ones(d), "ln1_beta": np.zeros(d),
                "ln2_gamma": np.ones(d), "ln2_beta": np.zeros(d), "W1": rng.normal(size=(2 * d, d)),
                "b1": np.zeros(2 * d), "W2": rng.normal(size=(d, 2 * d)) / 2, "b2": np.zeros(d)}

    p = {"W_E": rng.normal(size=(V, d)), "P": rng.normal(size=(6, d)) / 2, "blocks": [block()],
         "lnf_gamma": np.ones(d), "lnf_beta": np.zeros(d)}
    if untied:
        p["W_U"] = rng.normal(size=(V, d))
    return p


def test_gpt_forward_rows_are_distributions_over_the_vocabulary():
    p = _tiny_gpt(np.random.default_rng(1))
    probs = arr(tf.gpt_forward([0, 1, 2], p, 2))  # "The movie ended"
    assert probs.shape == (3, 5)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-6)


def test_gpt_forward_is_causal():
    p = _tiny_gpt(np.random.default_rng(2), untied=True)
    a, b = arr(tf.gpt_forward([0, 1, 2], p, 2)), arr(tf.gpt_forward([0, 1, 4], p, 2))
    np.testing.assert_allclose(a[:2], b[:2], atol=1e-6)  # the first two rows cannot see token 2


def test_gpt_forward_without_blocks_by_hand():
    p = _tiny_gpt(np.random.default_rng(3))
    p["blocks"] = []
    x = p["W_E"][[3]] + p["P"][:1]
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-5)  # LN_f with γ = 1, β = 0
    z = x @ p["W_E"].T  # tied unembedding
    np.testing.assert_allclose(arr(tf.gpt_forward([3], p, 2)), np.exp(z) / np.exp(z).sum(), atol=1e-6)
