"""Misconceptions of a2 (RNNs and backpropagation through time), in the notes' words."""

from grader.catalog import Form, Misconception, register

register(
    Misconception(
        id="rnn-weights-transposed",
        title="x W instead of x W^T",
        explanation=(
            "Your results match a forward pass that multiplies by the weight matrix itself, "
            "e.g. `h_prev @ W_h`, instead of its transpose. The weights use the "
            "`torch.nn.Linear` layout (out, in): one row per state unit, so the row-vector "
            "step is z_t = x_t W_x^T + h_{t-1} W_h^T + b_h. A non-square W_x makes the "
            "transpose a shape error, but a square W_h lets the same slip through silently. Inside "
            "a BPTT function this forward-pass bug is the root cause: the backward ledger "
            "starts from the wrong states."
        ),
        section="slides Week 06, 'Two ordinary units form one recurrent state' (notes §2)",
    ),
    Misconception(
        id="bptt-last-use-only",
        title="only the last use of the shared weights counted",
        explanation=(
            "Your gradients of W_x, W_h and b_h match the contribution of the final position "
            "alone. The same weights are used at every step, so their gradient is the sum of "
            "one contribution per use: dL/dW_h = Σ_t G_t with G_t = (g^z_t)^T h_{t-1} (and "
            "likewise Σ_t (g^z_t)^T x_t and Σ_t g^z_t). Propagate g^h_{t-1} = g^z_t W_h back "
            "through every step and accumulate."
        ),
        section="notes §2, 'Backprop through time'; slides Week 06, 'Shared weights receive the sum of their uses'",
    ),
    Misconception(
        id="bptt-missing-tanh-derivative",
        title="the tanh derivative left out",
        explanation=(
            "Your gradients match a backward pass that treats tanh as the identity: "
            "g^z_t = g^h_t. The local derivative of h_t = tanh(z_t) is 1 - h_t^2, so "
            "g^z_t = g^h_t ⊙ (1 - h_t^2) before the signal reaches the weights or the "
            "previous state."
        ),
        section="slides Week 06, 'The activation supplies a local derivative' (notes §2, 'Backprop through time')",
    ),
    Misconception(
        id="bptt-derivative-of-preactivation",
        title="1 - z^2 instead of 1 - h^2",
        explanation=(
            "Your gradients match a backward pass that multiplies by 1 - z_t^2, squaring the "
            "preactivation. tanh'(z) = 1 - tanh(z)^2 = 1 - h^2: square the state h_t (the "
            "activated value), not z_t. The two agree only near z = 0."
        ),
        section="slides Week 06, 'The activation supplies a local derivative'",
    ),
    Misconception(
        id="bptt-tanh-derivative-of-state",
        title="tanh' taken at h_t: 1 - tanh(h_t)^2 instead of 1 - h_t^2",
        explanation=(
            "Your gradients match a backward pass that multiplies by 1 - tanh(h_t)^2, tanh's "
            "derivative evaluated at the state h_t, so tanh is applied twice. The derivative "
            "belongs at the preactivation: tanh'(z_t) = 1 - tanh(z_t)^2, which is 1 - h_t^2 "
            "from the state you already have."
        ),
        section="slides Week 06, 'The activation supplies a local derivative'",
    ),
    Misconception(
        id="bptt-outer-product-transposed",
        title="outer product in the wrong order",
        explanation=(
            "Your weight gradient is the transpose of the right one (or has shape (D, H) for "
            "W_x): one use contributes G_t = (g^z_t)^T h_{t-1}, an H x 1 column times a 1 x H "
            "row. Rows index the receiving units (g^z_t), columns the inputs (h_{t-1} or x_t), "
            "so the gradient has the shape of the weight, (out, in)."
        ),
        section="slides Week 06, 'One weight use contributes an outer product'",
    ),
    Misconception(
        id="ce-sum-not-mean",
        title="cross-entropy summed over positions, not averaged",
        explanation=(
            "Your gradients are T times too large: the 1/T of the mean objective "
            "L = (1/T) Σ_t ℓ_t is missing from them (and from your loss where it sums the "
            "per-position losses). The loss derivative at each position is "
            "g^a_t = (p_t - onehot(y_t)) / T."
        ),
        section="slides Week 06, 'A loss at every position adds direct signals' (notes §2, 'Language modeling & training')",
        forms=(
            Form(
                function="bptt_sequence_ce",
                right=("loss",),
                explanation=(
                    "Your loss is right (the mean over positions), but your gradients are T times "
                    "too large: the 1/T of the mean is missing from them. The loss derivative at "
                    "each position is g^a_t = (p_t - onehot(y_t)) / T; with it, every sum over t "
                    "(W_o, b_o and the recurrent weights) comes out right."
                ),
            ),
            Form(
                function="bptt_sequence_ce",
                explanation=(
                    "Your loss and your gradients are both T times too large: they sum the "
                    "per-position losses instead of averaging them. The objective is the mean "
                    "L = (1/T) Σ_t ℓ_t, so the loss derivative at each position is "
                    "g^a_t = (p_t - onehot(y_t)) / T."
                ),
            ),
            Form(
                function="sequence_perplexity",
                explanation=(
                    "Your cross-entropy sums the per-position losses instead of averaging them, and "
                    "your perplexity is exp of that sum. Cross-entropy is a mean per token, "
                    "CE = (1/T) Σ_t -log p(y_t) in nats, and perplexity = exp(CE), the geometric "
                    "mean of the inverse probabilities of the targets: exp of the summed loss is "
                    "the inverse probability of the whole sequence, which grows with its length."
                ),
            ),
        ),
    ),
    Misconception(
        id="ce-double-mean",
        title="divided by T twice",
        explanation=(
            "Your gradients are T times too small: the 1/T of the mean objective was applied "
            "at the loss derivative g^a_t = (p_t - onehot(y_t)) / T and again in the parameter "
            "sums. Divide by T once, at the loss derivative; no second division by T belongs "
            "in the sums over t."
        ),
        section="slides Week 06, 'The recurrent parameters collect local contributions'",
    ),
    Misconception(
        id="bptt-missing-direct-term",
        title="per-position losses at earlier steps ignored",
        explanation=(
            "Your recurrent gradients match a backward pass that starts only from the last "
            "position's loss. With a loss at every position, each hidden state receives a "
            "direct signal through its own output head as well as the signal from the future: "
            "g^h_t = g^a_t W_o + g^z_{t+1} W_h."
        ),
        section="slides Week 06, 'A hidden state receives direct and future gradients'",
    ),
    Misconception(
        id="clip-per-tensor",
        title="each array clipped by its own norm",
        explanation=(
            "Your result rescales each gradient array by its own norm. Clipping by the global "
            "norm uses ONE norm over the full gradient vector, ||g||_2 = sqrt(Σ over all "
            "arrays of Σ g^2), and, when it exceeds c, multiplies every array by the same "
            "factor c / ||g||_2: that preserves the direction of the whole update."
        ),
        section="slides Week 06, 'Gradient clipping limits a large update direction' (notes §2)",
    ),
    Misconception(
        id="perplexity-base-2",
        title="perplexity as 2^CE with CE in nats",
        explanation=(
            "Your perplexity is 2^CE. The course's cross-entropy uses natural logs (nats), so "
            "perplexity = exp(CE), the geometric mean of the inverse probabilities of the "
            "targets. 2^CE is right only when CE is measured in bits (log base 2)."
        ),
        section="notes §2, 'Language modeling & training'",
    ),
    Misconception(
        id="rnn-h0-ignored",
        title="the initial state h0 ignored in the forward pass",
        explanation=(
            "Your results match a forward pass that starts from h_{-1} = 0 although an initial "
            "state h0 was given. h0 is the state before the first step: z_0 = x_0 W_x^T + "
            "h0 W_h^T + b_h, and zeros are only the default when h0 is None. Every later state "
            "(and, in a BPTT function, every gradient) depends on it, and G_0 = (g^z_0)^T h0 "
            "is then no longer zero."
        ),
        section="slides Week 06, 'Two ordinary units form one recurrent state' (h_-1 = 0 is our declared initial state, not a universal requirement)",
    ),
    Misconception(
        id="bptt-h0-missing-from-gradient",
        title="h0 left out of the W_h gradient",
        explanation=(
            "Your forward pass uses h0, but your W_h gradient treats h_{-1} as zero: the first "
            "use of W_h contributes G_0 = (g^z_0)^T h_{-1}, and h_{-1} is h0 when one is given. "
            "G_0 vanishes only for a zero initial state; with h0 it is an outer product like "
            "every other use. W_x and b_h are unaffected, which is why only W_h is off."
        ),
        section="slides Week 06, 'Shared weights receive the sum of their uses' (a nonzero initial state could give a nonzero G_0)",
    ),
    Misconception(
        id="bptt-uses-current-state",
        title="h_t in place of h_{t-1} in the W_h gradient",
        explanation=(
            "Your W_h gradient pairs g^z_t with h_t, the state the step produced. The use of W_h "
            "at step t multiplies the previous state, z_t = ... + h_{t-1} W_h^T, so its "
            "contribution is G_t = (g^z_t)^T h_{t-1}: the local input of that use, with h_{-1} "
            "the initial state (zeros or h0)."
        ),
        section="slides Week 06, 'One weight use contributes an outer product' (G_t = (g^z_t)^T h_{t-1})",
    ),
    Misconception(
        id="bptt-backward-weights-transposed",
        title="the backward signal sent through W_h^T instead of W_h",
        explanation=(
            "Your gradients match a backward pass with g^h_{t-1} = g^z_t W_h^T. In the "
            "row-vector convention the forward step is z_t = ... + h_{t-1} W_h^T, so the "
            "vector-Jacobian product is g^h_{t-1} = g^z_t W_h (in column form it would be "
            "W_h^T g^z_t: the transposes swap sides together with the vectors)."
        ),
        section="slides Week 06, 'One final loss travels backward through time' (g^h_t = g^z_{t+1} W_h)",
    ),
    Misconception(
        id="bptt-missing-future-term",
        title="no gradient carried back through time",
        explanation=(
            "Your gradients match a backward pass where each hidden state receives only the "
            "direct signal from its own output, g^h_t = g^a_t W_o. A state also affects every "
            "later position through the recurrence, so it receives the future signal too: "
            "g^h_t = g^a_t W_o + g^z_{t+1} W_h, with g^z_T = 0. Without it each loss trains only "
            "the weight use at its own position, and W_h learns nothing about earlier inputs."
        ),
        section="slides Week 06, 'A hidden state receives direct and future gradients'",
    ),
    Misconception(
        id="ce-in-bits",
        title="cross-entropy in bits (log base 2)",
        explanation=(
            "Your cross-entropy matches -log2 p, in bits: 1/ln 2 = 1.443 times the value in "
            "nats. The course's cross-entropy uses natural logs, CE = (1/T) Σ_t -ln "
            "softmax(a_t)[y_t] in nats, so that perplexity = exp(CE) and the gradient of the "
            "mean loss is (p_t - onehot(y_t)) / T."
        ),
        section="notes §2, 'Language modeling & training'; slides Week 06, 'The same states produce three-class predictions' (natural log gives cross-entropy in nats)",
        forms=(
            Form(
                function="sequence_perplexity",
                right=("perplexity",),
                explanation=(
                    "Your perplexity is right but your cross-entropy is in bits: -log2 p, "
                    "1/ln 2 = 1.443 times the value in nats (2^CE_bits = exp(CE_nats), which is "
                    "why the perplexity agrees). The course's cross-entropy uses natural logs: "
                    "CE = (1/T) Σ_t -ln softmax(a_t)[y_t] in nats."
                ),
            ),
            Form(
                function="ngram_perplexity",
                explanation=(
                    "Your perplexity is e raised to a cross-entropy in bits: the log-probabilities "
                    "were taken with log2 (-log2 P is 1/ln 2 = 1.443 times -ln P), then "
                    "exponentiated with e. The log and the power must share a base: "
                    "PPL = exp(-(1/N) Σ ln P) = 2^(-(1/N) Σ log2 P). The course uses natural logs."
                ),
            ),
        ),
    ),
    Misconception(
        id="clip-always-rescales",
        title="clipping rescales even a small gradient",
        explanation=(
            "Your result multiplies the gradient by c / ||g||_2 even when ||g||_2 <= c, which "
            "scales a small gradient *up* to norm c. Clipping is a cap: g̃ = g when "
            "||g||_2 <= c, and (c / ||g||_2) g only when ||g||_2 > c (equivalently "
            "g · min(1, c / ||g||_2))."
        ),
        section="slides Week 06, 'Gradient clipping limits a large update direction' (notes §2)",
    ),
    # broken steps of the BPTT-factor derivation (written question a2.w_bptt_factor)
    Misconception(
        id="bptt-tanh-prime-one-minus-tanh",
        title="tanh' written as 1 − tanh instead of 1 − tanh²",
        explanation=(
            "A step of your derivation replaces tanh'(z) by 1 − tanh(z). The derivative of tanh is "
            "1 − tanh(z)², so the local factor of h_t = tanh(z_t) is 1 − h_t², the square of the "
            "state."
        ),
        section="slides Week 06, 'The activation supplies a local derivative' (notes §2)",
    ),
    Misconception(
        id="bptt-tanh-prime-sigmoid-form",
        title="the sigmoid's derivative h(1 − h) used for tanh",
        explanation=(
            "A step of your derivation uses h (1 − h), which is the derivative of the logistic "
            "sigmoid written in its output. For h = tanh(z) the derivative is 1 − h²."
        ),
        section="slides Week 06, 'The activation supplies a local derivative' (notes §2)",
    ),
    Misconception(
        id="bptt-factor-missing-recurrent-weight",
        title="∂h_t/∂h_{t−1} without the recurrent weight",
        explanation=(
            "Your factor stops the chain rule at the preactivation: ∂h_t/∂z_t = 1 − h_t². The state "
            "h_{t−1} enters z_t = w_h h_{t−1} + w_x x_t + b through w_h, so ∂z_t/∂h_{t−1} = w_h "
            "multiplies it: the recurrent Jacobian is (1 − h_t²) w_h, the factor BPTT multiplies "
            "once per step."
        ),
        section="notes §2, 'Vanishing / exploding through time'",
    ),
    # issue 33: conventions of the implementations students copy, which the handout excludes
    Misconception(
        id="rnn-bias-counted-twice",
        title="the bias added twice (torch.nn.RNN's b_ih + b_hh)",
        explanation=(
            "Your states match z_t = x_t W_x^T + h_{t-1} W_h^T + 2 b_h: the bias entered twice, "
            "as when b_h is given to both of torch.nn.RNN's biases (`bias_ih` and `bias_hh`: "
            "torch adds b_ih + b_hh). The handout's RNN has ONE bias: z_t = x_t W_x^T + "
            "h_{t-1} W_h^T + b_h (with torch.nn.RNN, set one of its two biases to zero)."
        ),
        section="slides Week 06, 'Two ordinary units form one recurrent state' (notes §2); the "
        "handout, 'Conventions'",
    ),
    Misconception(
        id="clip-by-value",
        title="gradients clipped by value instead of by the global norm",
        explanation=(
            "You clipped each entry to [-c, c] (`np.clip(g, -c, c)`, as Karpathy's min-char-rnn "
            "and `torch.nn.utils.clip_grad_value_` do). That changes the gradient's direction: "
            "large entries are cut while small ones stay. The handout clips by the global norm: "
            "one norm ‖g‖_2 over all arrays together, and when it exceeds c every entry is "
            "multiplied by the same factor c/‖g‖_2."
        ),
        section="slides Week 06, 'Gradient clipping limits a large update direction' (notes §2); "
        "the handout, question 4",
    ),
    Misconception(
        id="ce-in-log10",
        title="cross-entropy in log base 10 (KenLM's scores)",
        explanation=(
            "Your cross-entropy uses log10, the base of KenLM's and SRILM's log-probabilities: it "
            "is the CE in nats divided by ln 10 ≈ 2.303. The course's cross-entropy is in nats "
            "(natural log), and the perplexity is exp(CE); 10^(CE in log10) is the same "
            "perplexity, but the CE asked for is the one in nats."
        ),
        section="notes §2, 'Language modeling & training' (perplexity = exp of the CE in nats)",
    ),
)
