"""Assignment 1: word vectors (notes §1). Fill in every function; keep the names and arguments.

Conventions: row vectors; the rows of U (V, d) are the outside vectors u_w and v_c (d,) is
the center vector; softmax over the last axis unless `axis` says otherwise; natural logs.
Inputs arrive as numpy float64 arrays (ints for indices). You may compute with numpy or
torch, in float32 or float64, and return arrays, tensors, lists or numbers; shapes must
match exactly.
"""

import numpy as np  # noqa: F401


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`.

    x: array of any shape. Returns the same shape, summing to 1 along `axis`:
        softmax(x)_i = exp(x_i - max_j x_j) / Σ_j exp(x_j - max_j x_j).
    Must stay finite for logits around ±1000. Each slice along `axis` sums to 1, not the whole
    array (`scipy.special.softmax(x)` without an axis normalises every entry together).
    """
    raise NotImplementedError


def naive_softmax_loss_and_gradient(v_c, o, U):
    """Skip-gram loss for one (center, outside) pair, with the full softmax.

    v_c: (d,) center vector; o: int, index of the true outside word; U: (V, d), row w = u_w.
    P(·|c) = softmax(U @ v_c);  loss = -log P(o|c).
    Returns (loss: float, grad_v_c: (d,), grad_U: (V, d)), the gradients of the loss:
        grad_v_c = Σ_x P(x|c) u_x - u_o = U^T (ŷ - y),   grad_U = (ŷ - y) v_c^T,
    with ŷ = P(·|c) and y the one-hot vector of o.
    """
    raise NotImplementedError


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    """Skip-gram with negative sampling (SGNS) for one pair and K noise words.

    v_c: (d,); o: int; U: (V, d); neg_indices: (K,) int, may repeat (a repeat counts each time)
    and may contain o itself (then it is a noise word too: word2vec.c's skip of it is not used).
    loss = -log σ(u_o·v_c) - Σ_k log σ(-u_k·v_c).
    Returns (loss: float, grad_v_c: (d,), grad_U: (V, d)). Use a sigmoid that does not
    overflow when |u·v_c| is about 1000.
    """
    raise NotImplementedError


def noise_distribution(counts, power=0.75):
    """SGNS noise distribution: P_n(w) = count(w)^power / Σ_w' count(w')^power.

    counts: (V,) unigram counts. Returns (V,), summing to 1.
    """
    raise NotImplementedError


def glove_weight(X, x_max=100.0, alpha=0.75):
    """GloVe weighting, elementwise: f(x) = (x / x_max)^alpha for x < x_max, 1 for x >= x_max (0 at 0).

    X: array of counts, any shape. Returns the same shape.
    """
    raise NotImplementedError


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    """GloVe loss J = Σ over X_ij > 0 of f(X_ij) (w_i·w̃_j + b_i + b̃_j - log X_ij)^2.

    W, W_tilde: (V, d) (row i = w_i, row j = w̃_j); b, b_tilde: (V,); X: (V, V) counts.
    Returns a float: the sum itself (no 1/2 as in glove.c's cost, no mean over the pairs).
    """
    raise NotImplementedError


def analogy(E, vocab, a, b, c):
    """a : b :: c : ?  by cosine similarity.

    E: (V, d) embeddings, row i for vocab[i]; vocab: list of V words; a, b, c: words of vocab.
    Returns the word w, not one of a, b, c, with the highest cos(e_w, e_b - e_a + e_c), with the
    raw vectors e_a, e_b, e_c (not scaled to length 1 first, as gensim's most_similar does).
    """
    raise NotImplementedError


def cooccurrence_matrix(corpus, vocab, window=1):
    """Window-based co-occurrence counts (count-based word vectors, notes §1).

    corpus: list of sentences, each a list of words; vocab: list of V words (every corpus word
    is in it). Returns X (V, V) float: X[i, j] = the number of times vocab[j] occurs within
    `window` positions (on either side) of an occurrence of vocab[i], in the same sentence.
    A word is not its own neighbour (the centre position is not counted); X is symmetric. Every
    neighbour adds 1, however far inside the window (no 1/distance weighting as in GloVe's
    cooccur.c). A sentence may be empty or a single word.
    """
    raise NotImplementedError


def svd_embeddings(X, k):
    """Count-based embeddings: with X = U Σ V^T (a full SVD, singular values in decreasing
    order), return the rows of U_k Σ_k, shape (V, k): the first k columns of U, each scaled
    by its singular value (not by its square root, as hyperwords' eigenvalue weighting does).

    Singular vectors are only defined up to the sign of each column, so either sign is
    accepted: the grader compares dot products and cosine similarities between your rows.
    """
    raise NotImplementedError
