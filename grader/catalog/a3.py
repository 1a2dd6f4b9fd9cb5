"""Misconceptions of a3_gated_seq2seq: gated cells, attention scores, beam search, BLEU."""

from grader.catalog import Misconception, register

register(
    Misconception(
        id="lstm-gate-order",
        title="LSTM gate blocks read in the wrong order",
        explanation=(
            "Your cell matches one that reads the stacked rows of `weight_ih` / `weight_hh` in "
            "another gate order (for example forget, input, output, candidate: the order the "
            "notes list the equations in). "
            "`torch.nn.LSTMCell` stacks its four row blocks as input i, forget f, candidate "
            "g (= c̃), output o: block k is rows `k*H:(k+1)*H`."
        ),
        section="notes §3, 'The fix: a protected memory'; slides, 'PyTorch LSTM equations'",
    ),
    Misconception(
        id="lstm-output-uses-old-cell",
        title="LSTM hidden state read from the old cell",
        explanation=(
            "Your new cell c_t is right but h_t = o_t ⊙ tanh(c_{t-1}): the visible state must read "
            "the cell after this step's update, h_t = o_t ⊙ tanh(c_t), with "
            "c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t computed first."
        ),
        section="notes §3, 'The fix: a protected memory'",
    ),
    Misconception(
        id="gru-update-flipped",
        title="GRU update gate applied to the wrong path",
        explanation=(
            "Your output matches h' = z ⊙ n + (1 - z) ⊙ h. In torch's GRUCell (and the slides' "
            "retention gate u_t) the gate multiplies the old state: h' = (1 - z) ⊙ n + z ⊙ h, so "
            "z near 1 retains the old coordinate. Other texts use the opposite mixture; check "
            "which path receives the gate."
        ),
        section="slides, 'A GRU learns how much old state to retain'",
    ),
    Misconception(
        id="gru-reset-before-matmul",
        title="GRU reset gate applied before the recurrent matrix",
        explanation=(
            "Your candidate matches tanh(W_in x + b_in + W_hn (r ⊙ h) + b_hn): the reset gate "
            "scaled h before the recurrent product. PyTorch resets after the recurrent affine "
            "map, bias included: n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))."
        ),
        section="slides, 'PyTorch GRU: reset after the recurrent affine operation'",
    ),
    Misconception(
        id="attention-no-softmax",
        title="attention weights without the softmax",
        explanation=(
            "Your weights are the raw scores e_i (or the scores divided by their sum, e_i / Σ_j e_j: "
            "no exponential). Attention is score → softmax → weighted sum: α_i = exp(e_i) / Σ_j exp(e_j) "
            "is a distribution (positive, sums to 1), and a = Σ_i α_i h_i."
        ),
        section="notes §4, 'Attention, mechanically'",
    ),
    Misconception(
        id="additive-missing-tanh",
        title="additive score without the tanh",
        explanation=(
            "Your scores match v·(W1 h_i + W2 s): without the nonlinearity the 'small MLP' "
            "collapses to a linear function. The additive score is e_i = v·tanh(W1 h_i + W2 s)."
        ),
        section="notes §4, 'The general idea — query/key/value' (score variants)",
    ),
    Misconception(
        id="multiplicative-transposed",
        title="multiplicative score with W transposed",
        explanation=(
            "Your scores match s^T W^T h_i. With W of shape (d_s, d_h), e_i = s^T W h_i: W's "
            "rows pair with the decoder state s and its columns with the encoder states h_i "
            "(the transposed form only runs when d_s = d_h, and then gives other numbers)."
        ),
        section="notes §4, 'The general idea — query/key/value' (score variants)",
    ),
    Misconception(
        id="beam-no-length-normalization",
        title="beam search without length normalisation",
        explanation=(
            "Your choice among finished hypotheses matches the raw summed log-probability. Longer "
            "hypotheses accrue more negative terms, so the final choice divides each score by "
            "its number of tokens after bos when `length_normalize` is on."
        ),
        section="notes §4, 'Decoding the target'",
    ),
    Misconception(
        id="beam-eos-score-dropped",
        title="a finished hypothesis scored without eos's log-probability",
        explanation=(
            "Your choice matches scores that leave out log P(eos | prefix) (taken off when the "
            "hypothesis finishes, or eos scored as certain). eos is a generated token like any "
            "other: a hypothesis' score sums the log-probabilities of every token after bos, "
            "eos included, and eos counts in its length."
        ),
        section="the assignment README, 'Beam search, exactly'",
    ),
    Misconception(
        id="beam-stops-after-first-step",
        title="beam search that stops after its first step (the stop test inverted)",
        explanation=(
            "Your choice matches a search that ends after one step whatever it found: the best "
            "one-token hypothesis wins. The search goes on while fewer than `beam_size` "
            "hypotheses have finished and some are still live; it stops once `beam_size` have "
            "finished or none is live (`if len(finished) >= beam_size or not live: break`), "
            "or after `max_len` steps."
        ),
        section="the assignment README, 'Beam search, exactly'",
    ),
    Misconception(
        id="beam-length-normalize-inverted",
        title="length normalisation applied when `length_normalize` is off, and not when on",
        explanation=(
            "Your choice matches the raw summed log-probability when `length_normalize=True` "
            "and the per-token score when it is False: the flag is read the wrong way round. "
            "With the flag on, each finished score is divided by its number of tokens after "
            "bos; with it off, the raw sum decides."
        ),
        section="the assignment README, 'Beam search, exactly'",
    ),
    Misconception(
        id="beam-finished-leave-the-beam",
        title="finished hypotheses leave the beam (fairseq's convention)",
        explanation=(
            "Your search matches fairseq's: finished hypotheses are set aside and the beam is "
            "refilled with beam_size live ones from the next best candidates. The handout keeps "
            "the beam_size best candidates per step, finished ones included: a candidate that "
            "ends in eos takes one of the beam_size places, and only the others stay live."
        ),
        section="the assignment README, 'Beam search, exactly'",
    ),
    Misconception(
        id="bleu-no-brevity-penalty",
        title="BLEU without the brevity penalty",
        explanation=(
            "Your BLEU matches the precision part alone. Precision rewards short, safe "
            "candidates, so BLEU multiplies by BP = exp(1 - r/c) when the candidate corpus "
            "length c is at most the reference length r."
        ),
        section="notes §4, 'Decoding the target' (BLEU)",
    ),
    Misconception(
        id="bleu-shortest-reference",
        title="brevity penalty against the shortest reference",
        explanation=(
            "Your brevity penalty uses each sentence's shortest reference. r sums, per "
            "sentence, the reference length closest to the candidate's length (ties to the "
            "shorter one)."
        ),
        section="notes §4 (BLEU); the assignment README, 'BLEU, exactly'",
    ),
    Misconception(
        id="bleu-unclipped-counts",
        title="n-gram matches not clipped",
        explanation=(
            "Your precisions count every candidate n-gram found in a reference, however often "
            "it repeats ('the the the' would score perfectly). Each n-gram's matches are "
            "clipped at the largest count it has in any single reference."
        ),
        section="notes §4 (BLEU: n-gram precision)",
    ),
    Misconception(
        id="bleu-arithmetic-mean",
        title="n-gram precisions averaged arithmetically",
        explanation=(
            "Your BLEU combines p_1 … p_N with an arithmetic mean. BLEU uses the geometric mean "
            "exp((1/N) Σ_n log p_n), which a single poor precision pulls down much harder."
        ),
        section="notes §4 (BLEU); the assignment README, 'BLEU, exactly'",
    ),
    Misconception(
        id="bleu-smoothed",
        title="BLEU smoothed (nltk's SmoothingFunction, sacrebleu's default)",
        explanation=(
            "Your BLEU matches a smoothed one: a zero n-gram precision replaced by a small "
            "number (nltk's `SmoothingFunction().method1`, ε = 0.1 matches, or `method3`, the "
            "k-th zero precision 1/(2^k · count): sacrebleu's default 'exp'; Chen & Cherry 2014). "
            "Smoothing is a convention for sentence-level scores; the handout's corpus BLEU smooths "
            "nothing: when any p_n is 0, BLEU is 0.0."
        ),
        section="the assignment README, 'BLEU, exactly' (no smoothing)",
    ),
    Misconception(
        id="bleu-sentence-average",
        title="BLEU averaged over sentences instead of computed over the corpus",
        explanation=(
            "Your BLEU matches the mean of per-sentence scores (nltk's `sentence_bleu` averaged "
            "over the candidates). Corpus BLEU (nltk's `corpus_bleu`, sacrebleu) sums the clipped "
            "matches, the n-gram counts and the lengths c and r over the whole corpus first, "
            "then takes the precisions, their geometric mean and one brevity penalty."
        ),
        section="the assignment README, 'BLEU, exactly' (corpus-level)",
    ),
    # Greedy decoding
    Misconception(
        id="greedy-ties-to-larger-id",
        title="greedy ties broken towards the larger token id",
        explanation=(
            "When two tokens are equally likely your decoder takes the later one (a running maximum "
            "with `>=`, or a sort that puts larger ids first). The handout breaks ties towards the "
            "smaller id, as `np.argmax` / `torch.argmax` do (the first maximum)."
        ),
        section="notes §4, 'Decoding the target' (greedy: take the argmax each step); the README's "
        "`greedy_decode`",
    ),
    Misconception(
        id="greedy-returns-bos",
        title="greedy output includes bos",
        explanation=(
            "Your output starts with `bos`. bos is the prompt the decoder is given, not a generated "
            "token: return only the tokens generated after it (as beam_search does)."
        ),
        section="the README's `greedy_decode` (and 'Beam search, exactly': tokens after bos)",
    ),
    Misconception(
        id="eos-compared-by-identity",
        title="eos tested with `is` instead of `==`",
        explanation=(
            "Your decoder stops at eos when the token ids are small and runs past it when they are "
            "large: `w is eos` compares objects, not values, and CPython shares one object only for "
            "the ints -5 … 256. A vocabulary has many more ids: compare token ids with `==`."
        ),
        section="the README's `greedy_decode` (stop after generating eos); Python's `==` vs `is`",
    ),
    Misconception(
        id="greedy-ignores-eos",
        title="greedy decoding does not stop at eos",
        explanation=(
            "Your decoder keeps generating after it produced `eos`, up to max_len tokens. eos ends "
            "the hypothesis: stop right after appending it."
        ),
        section="notes §4, 'Decoding the target'; the README's `greedy_decode`",
    ),
    # broken steps of the cell-carry derivation (written question a3.w_lstm_carry)
    Misconception(
        id="lstm-carry-identity",
        title="the cell carry taken as the identity",
        explanation=(
            "Your derivation ends at 1, as if c_t = c_{t−1} + i_t g_t. The LSTM's cell update is "
            "c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t: the old cell is multiplied by the forget gate, so with "
            "the gates held fixed ∂c_t/∂c_{t−1} = diag(f_t), which is 1 only where f_t ≈ 1."
        ),
        section="notes §3, 'The additive cell' (∂c^(t)/∂c^(t−1) ≈ diag(f^(t)))",
    ),
    Misconception(
        id="lstm-carry-through-output",
        title="the hidden state differentiated instead of the cell",
        explanation=(
            "Your result carries o_t and tanh'(c_t): that is ∂h_t/∂c_{t−1}, through the output "
            "h_t = o_t ⊙ tanh(c_t). The cell-to-cell carry differentiates c_t = f_t ⊙ c_{t−1} + "
            "i_t ⊙ g_t itself, which gives f_t."
        ),
        section="notes §3, 'The additive cell'",
    ),
    Misconception(
        id="lstm-carry-gate-derivative",
        title="the forget gate's sigmoid differentiated",
        explanation=(
            "Your result f_t (1 − f_t) is the derivative of the sigmoid inside the forget gate. "
            "The carry asks for the derivative by c_{t−1}, which the gate multiplies: with the "
            "gates held fixed it is f_t itself."
        ),
        section="notes §3, 'The additive cell'",
    ),
)
