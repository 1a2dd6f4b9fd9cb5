"""a7 — text classification and n-gram language models.

Fill in every function (replace `raise NotImplementedError`). The README gives the problems
and the conventions: row vectors, W (out, in) with y = x @ W.T + b, softmax over the last
axis, natural logs. Inputs arrive as NumPy float64 arrays (ints for ids); compute with NumPy or
torch, in float32 or float64, and return arrays, tensors, lists or numbers.
"""

import numpy as np  # noqa: F401


def cosine_similarity(A, B):
    """Cosine of every row pair: A (n, d), B (m, d) -> (n, m), out[i, j] = cos(A[i], B[j]).

    cos(a, b) = a·b / (‖a‖ ‖b‖). Two 1-D vectors (d,), (d,) -> one float.
    """
    raise NotImplementedError


def softmax_cross_entropy(logits, y):
    """(loss, grad): the mean negative log-probability of the true classes and d loss / d logits.

    logits (C,) with y an int, or (B, C) with y (B,) ints. p = softmax(logits) over the last
    axis; loss = mean over the batch of −log p[y]; grad has the shape of logits:
    p − e_y for one example, (p − e_y) / B for a batch. Must stay finite for logits of any size.
    """
    raise NotImplementedError


def dan_forward(token_ids, mask, params):
    """Class probabilities of a Deep Averaging Network: (B, C).

    token_ids (B, T) ints; mask (B, T) bool, True at real tokens (every row has one);
    params: E (V, d), W1 (h, d), b1 (h,), W2 (C, h), b2 (C,).
    avg_b = mean of E[token_ids[b, t]] over the real tokens t of row b;
    probs = softmax(relu(avg @ W1.T + b1) @ W2.T + b2).
    """
    raise NotImplementedError


def dan_backward(token_ids, mask, params, y):
    """(loss, grads): the mean cross-entropy of dan_forward's probabilities for labels y (B,),
    and a dict of its gradients with the keys of params ("E" (V, d), "W1", "b1", "W2", "b2").

    A token that occurs twice in a sentence adds its share to its row of grads["E"] twice.
    """
    raise NotImplementedError


def ngram_counts(corpus, n):
    """{n-gram tuple: count} over every sentence of corpus (a list of lists of words).

    Each sentence is padded with n − 1 "<s>" in front and one "</s>" at the end (one, for
    any n); a one-word or empty sentence is padded the same way.
    Example (n = 2): ["the", "cat"] -> ("<s>", "the"), ("the", "cat"), ("cat", "</s>").
    """
    raise NotImplementedError


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    """Add-k smoothed P(word | context) = (c(context, word) + k) / (c(context) + k * V).

    counts: as ngram_counts returns; context: a tuple of n − 1 words; V = vocab_size;
    c(context) = the sum of the counts of the n-grams that start with context. k = 1: Laplace.
    """
    raise NotImplementedError


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    """exp(−(1/N) Σ log P(w_i | context_i)) over every predicted token of the padded sentences.

    Pad each sentence as ngram_counts does; predict each word and the final "</s>" (never a
    "<s>") from the n − 1 tokens before it with ngram_prob(..., k); N is the number of
    predicted tokens of all the sentences together ("</s>" included; words the counts never
    saw included): one perplexity for the whole set, not a mean of per-sentence ones.
    """
    raise NotImplementedError
