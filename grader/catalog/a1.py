"""Misconceptions of assignment 1 (word vectors), in the notes' words (notes §1)."""

from grader.catalog import Misconception, register

register(
    Misconception(
        id="softmax-unstable",
        title="softmax without the max shift",
        explanation=(
            "Your softmax exponentiates the raw scores: `exp(1000)` overflows to inf and "
            "inf/inf is NaN. Subtract each row's maximum before `exp`; the weights are "
            "unchanged, because softmax(x) = softmax(x - c) for any constant c."
        ),
        section="notes §1, 'word2vec / skip-gram' (the softmax P(o|c)); Week 06 slides: "
        "'subtract each row's maximum before exponentiating'",
    ),
    Misconception(
        id="sigmoid-unstable",
        title="a sigmoid that overflows to NaN for a large argument",
        explanation=(
            "Your sigmoid gave NaN (or inf) for a dot product of about ±1000: written as "
            "`exp(x) / (1 + exp(x))`, `exp(1000)` overflows to inf and inf/inf is NaN, which "
            "spreads to the loss and the gradients. σ(x) = 1 / (1 + exp(-x)) is finite there "
            "(`exp(-1000)` is just 0); for a large negative x use exp(x) / (1 + exp(x)), whose "
            "`exp` sees only a negative number; or call `scipy.special.expit` or `torch.sigmoid`."
        ),
        section="notes §1, 'Negative sampling (SGNS)'",
    ),
    Misconception(
        id="skipgram-grad-sign",
        title="gradient of the log-likelihood instead of the loss",
        explanation=(
            "You returned observed minus expected, u_o - Σ_x P(x|c) u_x: that is the "
            "gradient of log P(o|c), the quantity the notes maximise. The loss is "
            "J = -log P(o|c), so its gradient is the negative: Σ_x P(x|c) u_x - u_o "
            "(expected minus observed), i.e. U^T (ŷ - y) with y the one-hot of o."
        ),
        section="notes §1, 'The center-vector gradient — derive it'",
    ),
    Misconception(
        id="skipgram-grad-no-expectation",
        title="the expected-vector term is missing",
        explanation=(
            "Your gradient keeps only the observed term (-u_o for v_c, -v_c at row o of "
            "grad_U): the derivative of log Σ_w exp(u_w·v_c) is missing. It contributes the "
            "expectation Σ_x P(x|c) u_x, so grad_v_c = Σ_x P(x|c) u_x - u_o and "
            "grad_U = (ŷ - y) v_c^T."
        ),
        section="notes §1, 'The center-vector gradient — derive it' (second term)",
    ),
    Misconception(
        id="skipgram-gradU-no-onehot",
        title="grad_U lacks the -1 at the row of the true outside word",
        explanation=(
            "Your grad_U is ŷ v_c^T: every row w gets P(w|c) v_c, but the row of the observed "
            "word o must also get -v_c, from the u_o·v_c term of log P(o|c). Use "
            "grad_U = (ŷ - y) v_c^T with y the one-hot of o."
        ),
        section="notes §1, 'The center-vector gradient — derive it' (the first term, for u_o)",
    ),
    Misconception(
        id="sgns-negatives-wrong-sign",
        title="noise words scored with log σ(+u_k·v_c)",
        explanation=(
            "The noise term of the SGNS loss is -Σ_k log σ(-u_k·v_c): it pushes the noise "
            "pairs' dot products down. With log σ(+u_k·v_c) your loss rewards the noise words "
            "like the true one, and the gradient for each k has the wrong form "
            "(it should be σ(u_k·v_c) u_k for v_c and σ(u_k·v_c) v_c for row k)."
        ),
        section="notes §1, 'Negative sampling (SGNS)'",
    ),
    Misconception(
        id="sgns-negatives-deduplicated",
        title="a repeated negative sample counted once in grad_U",
        explanation=(
            "When a noise word is drawn twice, the loss has its term twice, so its row of "
            "grad_U must receive σ(u_k·v_c) v_c twice. `grad_U[neg] += rows` uses buffered "
            "fancy indexing and keeps only one of the repeated updates; use "
            "`np.add.at(grad_U, neg, rows)` (or `index_add_` in torch, or a loop)."
        ),
        section="notes §1, 'Negative sampling (SGNS)' (the sum over i = 1 … k samples)",
    ),
    Misconception(
        id="sgns-outside-row-overwritten",
        title="row o of grad_U overwritten when o is also drawn as a negative",
        explanation=(
            "The true outside word o may be drawn as a negative sample too; then row o of grad_U "
            "gets both terms: (σ(u_o·v_c) - 1) v_c from the true pair plus σ(u_o·v_c) v_c for each "
            "time o was drawn as noise. Your row o of grad_U kept only one of them: it was written "
            "with `=` where it must be accumulated (`+=`, `np.add.at`, `index_add_`). The other "
            "rows, the loss and grad_v_c are right."
        ),
        section="notes §1, 'Negative sampling (SGNS)' (the sum over the k samples)",
    ),
    Misconception(
        id="noise-no-power",
        title="noise distribution without the 3/4 power",
        explanation=(
            "Your noise distribution is the plain unigram distribution count(w) / Σ count. "
            "SGNS samples from the unigram distribution raised to the power (3/4 by "
            "default), then renormalised: count(w)^power / Σ_w' count(w')^power, which "
            "upsamples rarer words."
        ),
        section="notes §1, 'Negative sampling (SGNS)' (unigram^(3/4))",
    ),
    Misconception(
        id="glove-weight-uncapped",
        title="GloVe weight not capped at 1",
        explanation=(
            "f(x) = (x/x_max)^alpha only below x_max; at and above x_max it is 1. Without "
            "the cap very frequent pairs dominate the loss, which is exactly what the "
            "weighting is there to prevent (it 'down-clips very frequent pairs')."
        ),
        section="notes §1, 'GloVe' (the weighting f)",
    ),
    Misconception(
        id="glove-zero-counts-included",
        title="GloVe sum includes the zero counts",
        explanation=(
            "The GloVe loss sums only over pairs with X_ij > 0: log 0 is -inf, and "
            "0 · inf is NaN, so including the zero entries makes the loss NaN. Mask the sum "
            "to the positive counts."
        ),
        section="notes §1, 'GloVe'",
    ),
    Misconception(
        id="analogy-inputs-not-excluded",
        title="analogy answer may be one of the input words",
        explanation=(
            "The vector e_b - e_a + e_c is usually closest to e_b or e_c themselves, so the "
            "argmax must skip the three input words a, b, c; your answer is one of them."
        ),
        section="notes §1, 'Evaluation' (exclude the input words, which otherwise win)",
    ),
    # Count-based vectors
    Misconception(
        id="cooccurrence-counts-self",
        title="a word counted as its own neighbour",
        explanation=(
            "Your window includes the centre position itself, so every occurrence of a word adds 1 to "
            "X[w, w]. The company a word keeps is the words AROUND it: offsets -window … -1 and "
            "1 … window, never 0 (a word next to another copy of itself still counts that copy)."
        ),
        section="notes §1, 'The representation problem' (the words in a window around it) and "
        "'Two families' (co-occurrence matrix + SVD)",
    ),
    Misconception(
        id="cooccurrence-one-sided-window",
        title="a one-sided window",
        explanation=(
            "You count only the words on one side of each word (only those after it, or only those "
            "before), so X is not symmetric: X[i, j] and X[j, i] each get half of the pairs. The "
            "window reaches `window` positions on BOTH sides, so each pair within the window is "
            "counted in both directions."
        ),
        section="notes §1, 'The representation problem' (the words in a window around it)",
    ),
    Misconception(
        id="svd-missing-singular-values",
        title="rows of U without Σ",
        explanation=(
            "You returned the first k columns of U alone. The embedding is U_k Σ_k: each direction "
            "scaled by its singular value, so that E E^T is the best rank-k approximation of X X^T "
            "and a strong direction counts more than a weak one in every dot product."
        ),
        section="notes §1, 'Two families' (rows of U in X = U Σ V^T are embeddings)",
    ),
    Misconception(
        id="svd-uses-V",
        title="V instead of U",
        explanation=(
            "You took the rows of V (the right singular vectors, one per CONTEXT column of X) instead "
            "of U (one per word, row of X). In X = U Σ V^T the word i is row i of U Σ. For a "
            "symmetric co-occurrence matrix the two agree up to signs; for a word-by-context matrix "
            "they do not even have the same number of rows. (np.linalg.svd returns V^T; torch.svd "
            "returns V.)"
        ),
        section="notes §1, 'Two families' (rows of U in X = U Σ V^T are embeddings)",
    ),
    Misconception(
        id="svd-not-truncated",
        title="no truncation to k dimensions",
        explanation=(
            "You kept every singular direction, U Σ, instead of the first k: the point of the SVD "
            "view is a dense k-dimensional vector per word, keeping the k largest singular values "
            "(the best rank-k approximation)."
        ),
        section="notes §1, 'Two families' (co-occurrence matrix + SVD)",
    ),
    # broken steps of the centre-gradient derivation (written question a1.w_skipgram_grad)
    Misconception(
        id="skipgram-grad-unnormalized",
        title="log Σ exp differentiated without dividing by the sum",
        explanation=(
            "A step of your derivation writes the derivative of log Σ_w exp(u_w v_c) as "
            "Σ_w u_w exp(u_w v_c), the derivative of the sum alone. The chain rule through the log "
            "divides by the sum: (Σ_w u_w exp(u_w v_c)) / Σ_w exp(u_w v_c) = Σ_w P(w|c) u_w, the "
            "expectation the gradient needs."
        ),
        section="notes §1, 'The center-vector gradient — derive it' (second term)",
    ),
)
