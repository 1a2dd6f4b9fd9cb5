"""Misconceptions of a4_transformer (shared ids such as softmax-wrong-axis live in common.py)."""

from grader.catalog import Form, Misconception, register

register(
    Misconception(
        id="attention-missing-scale",
        title="attention scores not scaled",
        explanation=(
            "Your scores are the raw dot products QKᵀ. Under the notes' assumptions Var(q·k) = d_k, "
            "so without the 1/sqrt(d_k) factor the softmax saturates as heads widen and its Jacobian "
            "diag(p) − ppᵀ goes to 0. Divide the scores by sqrt(d_k) before the softmax."
        ),
        section="notes §5, 'Scaled dot product — derive the √d'",
    ),
    Misconception(
        id="attention-scale-by-dk",
        title="scores divided by d_k instead of sqrt(d_k)",
        explanation=(
            "You divided by d_k. The scale undoes the score's standard deviation sqrt(d_k), not its "
            "variance d_k: Var(q·k / sqrt(d_k)) = 1, while dividing by d_k leaves variance 1/d_k and "
            "flattens the attention weights."
        ),
        section="notes §5, 'Scaled dot product — derive the √d'",
    ),
    Misconception(
        id="attention-scale-by-d-model",
        title="scores scaled by the model width instead of the head width",
        explanation=(
            "You divided by sqrt(d_model) (or by the square root of the full projection width h·d_k). "
            "Each head's dot product runs over its own d_k = d/h query/key features, so the scale is "
            "1/sqrt(d_k) (the notes write sqrt(d/h))."
        ),
        section="notes §5, 'Multi-head attention'",
    ),
    Misconception(
        id="mask-ignored",
        title="the mask has no effect",
        explanation=(
            "Your output equals unmasked attention: the mask never reached the scores (a common cause "
            "is `scores.masked_fill(...)` whose result is discarded — it is not in-place). Masked "
            "scores must become -inf before the softmax, so their weights are exactly 0."
        ),
        section="notes §5, 'Future masking'; slides 001, 'A causal mask changes which sources are available'",
    ),
    Misconception(
        id="mask-after-softmax",
        title="mask applied after the softmax",
        explanation=(
            "You zeroed the masked weights after the softmax, so each row no longer sums to one and the "
            "allowed keys keep the share computed with the forbidden ones. Mask the scores (add M = -inf) "
            "before the softmax: it then renormalises over the allowed keys."
        ),
        section="slides 001, 'A causal mask changes which sources are available'",
    ),
    Misconception(
        id="causal-mask-transposed",
        title="causal mask transposed",
        explanation=(
            "Your mask lets query i see keys j >= i (the future) and hides the past. Rows are queries, "
            "columns are keys: M[i, j] is True where j <= i, a lower-triangular matrix."
        ),
        section="notes §5, 'Future masking'",
    ),
    Misconception(
        id="causal-mask-excludes-self",
        title="causal mask hides the current token",
        explanation=(
            "Your mask allows only j < i, so a query cannot attend to its own position, and the first "
            "query row has no key at all: every key of that row is masked, and the softmax of all "
            "−inf is NaN. The causal mask keeps the diagonal: j <= i."
        ),
        section="slides 001, 'A causal mask changes which sources are available'",
    ),
    Misconception(
        id="padding-masks-queries",
        title="key padding mask applied to queries",
        explanation=(
            "The padding mask of shape (B, T) marks which keys are real; it must broadcast as "
            "(B, 1, 1, T) over the key axis. Yours was broadcast along the query axis, so real queries "
            "still attend to padding keys, and every key of a padded query row is masked: the "
            "softmax of all −inf is NaN there (or a uniform row with a large negative fill)."
        ),
        section="notes §6, 'Shapes through one block'; slides 001, 'padding'",
    ),
    Misconception(
        id="layernorm-wrong-axis",
        title="LayerNorm statistics over the wrong axis",
        explanation=(
            "You normalised down the sequence (or batch) axis. LayerNorm takes one mean and one variance "
            "per token, over its d features (statistics of shape (B, T)); averaging over tokens is what "
            "BatchNorm does per feature."
        ),
        section="notes §6, 'Batch norm vs layer norm — it's entirely about the axis'",
    ),
    Misconception(
        id="layernorm-unbiased-variance",
        title="unbiased variance in a normalisation",
        explanation=(
            "You divided the squared deviations by n − 1 (numpy `ddof=1`, torch `unbiased=True`, the "
            "default of `torch.var` and `Tensor.std`). LayerNorm and BatchNorm use the population "
            "variance, dividing by n (torch.nn.LayerNorm does the same)."
        ),
        section="slides 001, 'LayerNorm computes statistics within one token row'",
    ),
    Misconception(
        id="layernorm-eps-outside-sqrt",
        title="epsilon added outside the square root",
        explanation=(
            "You divided by sqrt(σ²) + ε, the form the notes (§5, §6) and the Lecture 7 slides write as "
            "σ + ε. This assignment follows torch.nn.LayerNorm and the block slides: sqrt(σ² + ε). The "
            "two agree unless the variance is tiny, which is exactly where ε matters."
        ),
        section="slides 001, 'LayerNorm computes statistics within one token row'",
        credit=0.5,
        convention=True,
    ),
    Misconception(
        id="gelu-tanh-approximation",
        title="GELU by its tanh approximation",
        explanation=(
            "You used 0.5 z (1 + tanh(sqrt(2/π)(z + 0.044715 z³))), the approximation GPT-2 uses "
            "(torch's `approximate='tanh'`). This assignment asks for the exact GELU z Φ(z) = "
            "z (1 + erf(z/√2)) / 2; the two differ by up to about 1e-3."
        ),
        section="slides 002, 'Activation Functions'",
        credit=0.5,
        convention=True,
    ),
    Misconception(
        id="pe-sin-cos-swapped",
        title="sine and cosine swapped",
        explanation=(
            "Even features take the sine and odd features the cosine: P[t, 2r] = sin(t ω_r), "
            "P[t, 2r+1] = cos(t ω_r). At t = 0 the even features are 0 and the odd ones 1."
        ),
        section="slides 002, 'Sinusoidal Positional Encodings'",
    ),
    Misconception(
        id="pe-frequency-exponent",
        title="wrong exponent in the position frequencies",
        explanation=(
            "The frequency of pair r is ω_r = 1 / 10000^(2r/d): the exponent is the even feature index "
            "2r over d. Yours uses another exponent (e.g. r/d or 4r/d), so the wavelengths do not run "
            "from 2π to 10000·2π."
        ),
        section="slides 002, 'Sinusoidal Positional Encodings'",
    ),
    Misconception(
        id="pe-halves-not-interleaved",
        title="sines and cosines in two halves",
        explanation=(
            "You put all sines in the first d/2 features and all cosines in the last d/2. The handout "
            "(Vaswani et al.) interleaves them: features 0, 2, 4, … are sines and 1, 3, 5, … cosines."
        ),
        section="slides 002, 'Sinusoidal Positional Encodings'",
    ),
    Misconception(
        id="prenorm-adds-normalized-input",
        title="pre-norm residual adds the normalised input",
        explanation=(
            "Your block computes LN(x) + Sublayer(LN(x)). In pre-norm the residual stream itself is never "
            "normalised: x + Sublayer(LN(x)), so the identity term of the Jacobian I + ∂Sublayer(LN(x))/∂x "
            "stays a clean pass-through."
        ),
        section="notes §6, 'Pre-norm vs post-norm'; slides 001, 'All rows survive both residual additions'",
    ),
    Misconception(
        id="ffn-missing-activation",
        title="FFN without its nonlinearity",
        explanation=(
            "Your FFN is W2 (W1 x + b1) + b2: two affine maps collapse into one, and attention is only a "
            "weighted average, so the block stays linear in the values. Apply the activation between them."
        ),
        section="slides 002, 'Problem 2: No Non-Linearity'; notes §6, 'The FFN, spelled out'",
    ),
    Misconception(
        id="cross-attention-uses-decoder-keys",
        title="cross-attention keys and values from the decoder",
        explanation=(
            "Your cross-attention takes keys and values from the decoder stream. In cross-attention the "
            "queries come from the decoder and the keys and values from the encoder output (memory), "
            "which may have a different length S."
        ),
        section="notes §5, 'The blocks' (decoder block)",
    ),
    Misconception(
        id="decoder-self-attention-not-causal",
        title="decoder self-attention without the causal mask",
        explanation=(
            "Your decoder's self-attention lets position t see later positions, i.e. its own targets. "
            "The decoder's self-attention is masked (causal); only cross-attention sees all of memory."
        ),
        section="notes §5, 'Future masking'",
        forms=(
            Form(
                "Your forward pass lets position t attend to later positions, i.e. to the very tokens it "
                "must predict. Every block of a decoder-only model uses causal self-attention: row t of "
                "the output may depend on tokens 0 … t only.",
                function="gpt_forward",
            ),
        ),
    ),
    # Ids this project adds for a4
    Misconception(
        id="batchnorm-over-batch-only",
        title="BatchNorm statistics over the batch axis only",
        explanation=(
            "For a (B, T, d) tensor BatchNorm takes one mean and variance per feature over both B and T "
            "(statistics of shape (d,)). Yours averaged over B only, giving one per (position, feature)."
        ),
        section="notes §6, 'Batch norm vs layer norm — it's entirely about the axis'",
    ),
    Misconception(
        id="rmsnorm-subtracts-mean",
        title="RMSNorm that centres the features",
        explanation=(
            "RMSNorm removes the mean-centring step: x / sqrt(mean(x²) + ε) · γ. Yours subtracts the mean "
            "first, which is LayerNorm without β."
        ),
        section="slides 002, 'RMSNorm: A Simplification'",
    ),
    Misconception(
        id="score-std-for-variance",
        title="standard deviation given for the variance",
        explanation="sqrt(d_k) is the standard deviation of q·k; its variance is the sum of d_k unit variances.",
        section="notes §5, 'Scaled dot product — derive the √d'",
    ),
    Misconception(
        id="softmax-jacobian-sign",
        title="softmax Jacobian with the sign flipped",
        explanation="∂p_i/∂s_j = p_i (δ_ij − p_j): the Jacobian is diag(p) − ppᵀ, positive on the diagonal.",
        section="notes §5, 'Scaled dot product — derive the √d'",
    ),
    Misconception(
        id="softmax-jacobian-diagonal-only",
        title="softmax Jacobian without the outer-product term",
        explanation="Each p_i depends on every score through the normaliser, hence the − ppᵀ term.",
        section="notes §5, 'Scaled dot product — derive the √d'",
    ),
    Misconception(
        id="attention-cost-linear",
        title="attention cost taken as linear in T",
        explanation="All-pairs attention is O(T² d): the score matrix has T × T entries, so doubling T quadruples it.",
        section="notes §5, 'Cost and variants'",
    ),
    # RoPE and the complete forward pass
    Misconception(
        id="rope-halves-not-interleaved",
        title="RoPE pairs across the two halves",
        explanation=(
            "You rotated feature i with feature i + d/2 (the `rotate_half` layout of GPT-NeoX and "
            "Hugging Face's transformers). The handout follows RoFormer, as Meta's LLaMA code does "
            "through complex numbers: the pairs are neighbours, (2i, 2i+1), each turned by "
            "t·base^(-2i/d). Both are rotations, but of different pairs."
        ),
        section="slides 002, 'Rotary Position Embeddings (RoPE)' (RoFormer, Su et al. 2021, eq. 34)",
    ),
    Misconception(
        id="rope-angle-sign",
        title="RoPE rotated the other way",
        explanation=(
            "Your rotation turns each pair by -t·θ_i: (x cos φ + y sin φ, -x sin φ + y cos φ). The "
            "rotation by +φ is (x cos φ - y sin φ, x sin φ + y cos φ), i.e. multiplying x + iy by "
            "e^{iφ}."
        ),
        section="slides 002, 'Rotary Position Embeddings (RoPE)' (RoFormer eq. 34)",
    ),
    Misconception(
        id="rope-frequency-exponent",
        title="RoPE frequencies with the wrong exponent",
        explanation=(
            "Pair i (features 2i and 2i+1) turns at θ_i = base^(-2i/d), the same frequencies as the "
            "sinusoidal positions. Your θ uses another exponent (base^(-i/d), the pair index "
            "without its 2, or base^(-4i/d), the feature index 2i doubled again)."
        ),
        section="slides 002, 'Rotary Position Embeddings (RoPE)' and 'Sinusoidal Positional Encodings'",
    ),
    Misconception(
        id="rope-rotates-values",
        title="RoPE applied to the values too",
        explanation=(
            "RoPE rotates the queries and the keys only: their dot product then depends on the "
            "offset m − n. The values are what attention mixes; rotating them adds a position "
            "dependence to the output that RoPE does not have."
        ),
        section="slides 002, 'Rotary Position Embeddings (RoPE)' ('Rotate query and key vectors')",
    ),
    Misconception(
        id="gpt-no-final-layernorm",
        title="no final LayerNorm before the unembedding",
        explanation=(
            "Your forward pass unembeds the residual stream straight after the last block. In a "
            "pre-norm transformer the stream itself is never normalised inside the blocks, so a "
            "final LayerNorm (ln_f) comes before `x @ W_U.T`."
        ),
        section="slides 002, 'The Complete Forward Pass' (x = final_ln(x)) and 'GPT-2 Architecture "
        "Overview'",
    ),
    Misconception(
        id="gpt-post-norm-blocks",
        title="post-norm blocks in a pre-norm forward pass",
        explanation=(
            "Your blocks normalise after the residual addition, LN(x + f(x)). The complete forward "
            "pass is pre-norm: x = x + attn(ln_1(x)), then x = x + ffn(ln_2(x)); the residual "
            "stream is left unnormalised."
        ),
        section="slides 002, 'The Complete Forward Pass' and 'Pre-Norm vs Post-Norm'",
    ),
    Misconception(
        id="gpt-positions-after-blocks",
        title="positions added after the blocks",
        explanation=(
            "The position embeddings enter the residual stream at the start, x = W_E[ids] + P[:T], "
            "so that attention can use order. Added after the blocks, the blocks never see where "
            "each token is."
        ),
        section="slides 002, 'Step 1: Entering the Residual Stream'",
    ),
    Misconception(
        id="gpt-unembedding-not-transposed",
        title="unembedding by W_E without the transpose",
        explanation=(
            "The logits are x W_U^T: W_U (V × d) holds one row per vocabulary word, and logit j is "
            "the dot product of x with row j. `x @ W_E` only runs when V = d, and then it mixes the "
            "wrong entries."
        ),
        section="slides 002, 'Step 4: Unembedding' and 'The Complete Forward Pass' (logits = x @ W_U.T)",
    ),
    Misconception(
        id="gpt-unembedding-always-tied",
        title="W_E used as the unembedding when an untied W_U is given",
        explanation=(
            "Weight tying applies only when the model has no separate unembedding. When `params` holds "
            "its own W_U, the logits are x W_U^T, not x W_E^T."
        ),
        section="slides 002, 'Notation Summary' (W_U, often tied to W_E) and 'GPT-2 Architecture "
        "Overview' (weight tied)",
    ),
    Misconception(
        id="gpt-softmax-over-positions",
        title="next-token softmax over the positions",
        explanation=(
            "Your probabilities sum to one down each column (over the T positions) instead of along "
            "each row: row t is P(next token | tokens 0 … t), a distribution over the V words of the "
            "vocabulary."
        ),
        section="slides 002, 'Step 5: Softmax'",
    ),
)

# Issue 17: the classic mistakes, one at a time
register(
    Misconception(
        id="causal-mask-dropped",
        title="causal mask dropped (the padding mask still applied)",
        explanation=(
            "With `causal=True` your attention lets each query attend to later positions: the "
            "causal mask never reached the scores, while the key padding mask did (padding keys "
            "get no weight). A common cause is a mask variable overwritten by the padding mask "
            "(`mask = pad`) or `causal` never read. A key must pass both masks: combine them "
            "with AND (`causal & padding`) before the softmax."
        ),
        section="notes §5, 'Future masking'; slides 001, 'A causal mask changes which sources are available'",
    ),
    Misconception(
        id="padding-mask-dropped",
        title="key padding mask dropped (the causal mask still applied)",
        explanation=(
            "Your attention gives weight to padding keys: the key padding mask (True at real "
            "tokens) never reached the scores, while the causal mask did. The padding mask must "
            "broadcast over the keys as (B, 1, 1, T) and be combined with the causal mask by AND, "
            "so a padding key gets weight exactly 0."
        ),
        section="notes §6, 'Shapes through one block'; slides 001, 'padding'",
        forms=(
            Form(
                "Your decoder's cross-attention gives weight to padded memory positions: the "
                "memory padding mask (True at real positions of `memory`) never reached its "
                "scores. It must broadcast over the memory keys as (B, 1, 1, S), so a padded "
                "position gets weight exactly 0.",
                function="decoder_block",
            ),
        ),
    ),
    Misconception(
        id="rmsnorm-eps-outside-sqrt",
        title="RMSNorm's epsilon added outside the square root",
        explanation=(
            "You divided by sqrt(mean(x²)) + ε, as many implementations do "
            "(`x / (x.norm(dim=-1) / sqrt(d) + eps)`). The handout fixes ε inside the root, as "
            "Meta's LLaMA and torch.nn.RMSNorm do: x / sqrt(mean(x²) + ε) · γ. The two agree "
            "unless mean(x²) is tiny or ε is large, which is where ε matters."
        ),
        section="README, code question 8 (`x / sqrt(mean(x²) + eps) * gamma`); slides 002, "
        "'RMSNorm: A Simplification'",
    ),
    Misconception(
        id="head-width-from-d-model",
        title="d_k taken as d/h instead of the projections' head width",
        explanation=(
            "You scaled the scores by 1/sqrt(d/h), with d read from X. The notes write d_k = d/h "
            "because their projections are square, but here W_Q has h·d_k rows and d_k need not be "
            "d/h: each head's dot product runs over its own d_k = W_Q.shape[0] // n_heads features, "
            "so the scale is 1/sqrt(d_k) with that d_k."
        ),
        section="notes §5, 'Multi-head attention'; slides 001, 'Multiple heads'",
    ),
    Misconception(
        id="output-projection-not-transposed",
        title="heads' output multiplied by W_O without the transpose",
        explanation=(
            "You computed Concat(heads) @ W_O. W_O stores one output unit per row, shape d × (h·d_v) "
            "(the torch.nn.Linear layout of this assignment), so the output projection is "
            "Concat(heads) W_Oᵀ; without the transpose the product only runs when W_O is square, "
            "and mixes the wrong entries."
        ),
        section="slides 001, 'Multiple heads' (W_O stores one output unit per row)",
    ),
    Misconception(
        id="attention-missing-output-projection",
        title="no output projection after the heads",
        explanation=(
            "You returned the concatenated heads Concat(head_1 … head_h) as they are. Multi-head "
            "attention ends with the output projection W_O: MHA(X) = Concat(head_1 … head_h) W_Oᵀ, "
            "which mixes the heads' features back into the model's d dimensions."
        ),
        section="notes §5, 'Multi-head attention'; slides 001, 'Multiple heads'",
    ),
    Misconception(
        id="masks-combined-with-or",
        title="causal and padding masks combined with OR",
        explanation=(
            "You joined the causal mask and the key padding mask with a logical OR, so a query may "
            "attend to a key that either mask allows: a real key in its future, or a padding key in "
            "its past. With True meaning 'may attend', a key must pass both masks: combine them with "
            "AND (`causal & padding`), or add both −inf masks to the scores."
        ),
        section="notes §5, 'Future masking'; slides 001, 'padding'",
    ),
    Misconception(
        id="cross-attention-normalizes-memory",
        title="LayerNorm applied to the encoder's memory",
        explanation=(
            "Your cross-attention reads its keys and values from a normalised memory. In a pre-norm "
            "decoder block only the residual stream is normalised before a sublayer: the queries come "
            "from LN2(U1), while the keys and values come from the encoder's output `memory` as it "
            "is (the encoder already ends in its own normalisation)."
        ),
        section="notes §6, 'Shapes through one block'; slides 001, 'cross-attention'",
    ),
    Misconception(
        id="rmsnorm-missing-eps",
        title="RMSNorm without its epsilon",
        explanation=(
            "You divided by sqrt(mean(x²)) (or used an epsilon other than the default). RMSNorm is "
            "x / sqrt(mean(x²) + ε) · γ with ε = 1e-6 by default: ε keeps the division finite for a "
            "token whose features are all near 0, which is exactly where it changes the output."
        ),
        section="slides 002, 'RMSNorm: A Simplification'",
    ),
    Misconception(
        id="swiglu-sigmoid-gate",
        title="SwiGLU gated by a sigmoid instead of Swish",
        explanation=(
            "You gated with σ(x W_gateᵀ), which is the original GLU. SwiGLU uses Swish (SiLU) as the "
            "gate: Swish(z) = z σ(z), so the hidden units are Swish(x W_gateᵀ) ⊙ (x W_upᵀ)."
        ),
        section="slides 002, 'FFN variants' (Swish, SwiGLU)",
    ),
    Misconception(
        id="swiglu-gate-up-swapped",
        title="SwiGLU's gate and up projections swapped",
        explanation=(
            "Your Swish is applied to x W_upᵀ and multiplies x W_gateᵀ. The gate is the branch that "
            "goes through the activation: Swish(x W_gateᵀ) ⊙ (x W_upᵀ); the up projection stays "
            "linear."
        ),
        section="slides 002, 'FFN variants' (Swish, SwiGLU)",
    ),
    # broken steps of the softmax-Jacobian derivation (written question a4.w_softmax_derivation)
    Misconception(
        id="softmax-jacobian-delta-misplaced",
        title="the diagonal entry's formula used off the diagonal",
        explanation=(
            "A step of your derivation gives p_a (1 − p_b) for a ≠ b, the diagonal formula with the "
            "index changed. ∂p_i/∂s_j = p_i (δ_ij − p_j): off the diagonal δ_ij = 0, so the entry is "
            "−p_i p_j."
        ),
        section="notes §5, 'Scaled dot product — derive the √d' (the Jacobian diag(p) − ppᵀ)",
    ),
    Misconception(
        id="softmax-jacobian-quotient-denominator",
        title="the quotient rule with S instead of S²",
        explanation=(
            "A step of your derivation divides by the normaliser S = Σ_k exp(s_k) once where the "
            "quotient rule divides by S²: ∂/∂s_b (exp(s_a)/S) = −exp(s_a) exp(s_b)/S² = −p_a p_b."
        ),
        section="notes §5, 'Scaled dot product — derive the √d' (the Jacobian diag(p) − ppᵀ)",
    ),
)
