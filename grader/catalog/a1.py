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
    # issue 33: conventions of the implementations students copy, which the handout excludes
    Misconception(
        id="softmax-over-all-entries",
        title="softmax over every entry of the array (scipy's default axis=None)",
        explanation=(
            "Your softmax sums to 1 over the WHOLE array, not along `axis`: that is what "
            "`scipy.special.softmax(x)` does when no axis is given (its default is axis=None, "
            "every entry). The handout's softmax normalises each slice along `axis` (the last "
            "one by default): pass the axis on, `exp(x - max) / sum(exp(x - max), axis=axis, "
            "keepdims=True)` with the max taken along the same axis."
        ),
        section="the handout, question 1 (`softmax(x, axis=-1)`: along `axis`); notes §1 "
        "(P(·|c) sums to 1 over the vocabulary)",
    ),
    Misconception(
        id="sgns-true-word-skipped",
        title="the true word skipped where it was drawn as a noise word (word2vec.c's rule)",
        explanation=(
            "Your loss and gradients leave out the noise terms of the samples equal to the "
            "outside word o, as the original word2vec C code does (`if (target == word) "
            "continue;`; gensim redraws such samples). The handout takes `neg_indices` as "
            "given: every entry is a noise word, o included, so where o was drawn the loss "
            "gets -log σ(-u_o·v_c) too and row o of grad_U gets both its terms."
        ),
        section="the handout, question 3 (`neg_indices` may contain `o` itself); notes §1, "
        "'Negative sampling (SGNS)'",
    ),
    Misconception(
        id="glove-loss-halved",
        title="GloVe loss with a factor ½ (GloVe's C code)",
        explanation=(
            "Your loss is half the handout's: GloVe's own C code (glove.c) accumulates "
            "`0.5 * f(X_ij) * diff^2`, which only rescales the gradient. The handout's J has "
            "no ½: J = Σ_{X_ij > 0} f(X_ij) (w_i·w̃_j + b_i + b̃_j - log X_ij)²."
        ),
        section="the handout, question 6; notes §1, 'GloVe'",
    ),
    Misconception(
        id="glove-loss-averaged",
        title="GloVe loss averaged instead of summed",
        explanation=(
            "Your loss is the MEAN of the weighted squared errors (over the pairs with "
            "X_ij > 0, or over all V² entries), as PyTorch GloVe implementations that end with "
            "`loss.mean()` report it. The handout's J is the SUM over the pairs with X_ij > 0: "
            "J = Σ_{X_ij > 0} f(X_ij) (w_i·w̃_j + b_i + b̃_j - log X_ij)²."
        ),
        section="the handout, question 6; notes §1, 'GloVe'",
    ),
    Misconception(
        id="analogy-inputs-normalized",
        title="the input vectors scaled to length 1 before e_b - e_a + e_c (gensim's most_similar)",
        explanation=(
            "Your answer is the word closest to ê_b - ê_a + ê_c with each input vector divided "
            "by its norm first, which is what gensim's `most_similar(positive=[b, c], "
            "negative=[a])` does. The handout takes the raw vectors: the target is "
            "e_b - e_a + e_c, and only the cosine divides (each candidate by its own norm and "
            "the target by its norm)."
        ),
        section="the handout, question 7 (cos(e_w, e_b - e_a + e_c)); notes §1, 'Evaluation'",
    ),
    Misconception(
        id="cooccurrence-distance-weighted",
        title="neighbours weighted by 1/distance (GloVe's cooccur.c)",
        explanation=(
            "Your matrix adds 1/d for a neighbour d positions away, as GloVe's co-occurrence "
            "tool (cooccur.c) does by default. The handout counts: every word within `window` "
            "positions on either side adds exactly 1, however far inside the window it is, so "
            "X holds whole numbers."
        ),
        section="the handout, question 15 (the number of times word j occurs within `window` "
        "positions); notes §1, 'Two families' (co-occurrence matrix)",
    ),
    Misconception(
        id="svd-sqrt-singular-values",
        title="rows of U Σ^½ (hyperwords' eigenvalue weighting)",
        explanation=(
            "Your embedding scales each direction by the square root of its singular value, "
            "U_k Σ_k^½, the 'eigenvalue weighting' p = 0.5 of Levy, Goldberg & Dagan's hyperwords "
            "code. The handout asks for U_k Σ_k (what scikit-learn's TruncatedSVD.fit_transform "
            "returns): each column of U_k times its singular value itself."
        ),
        section="the handout, question 16 (the rows of U_k Σ_k); notes §1, 'Two families'",
    ),
)
