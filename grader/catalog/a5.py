"""Misconceptions of a5 (shapes and debugging): heads, masks, the LM loss, pooling, block shapes.

heads-reshape-without-transpose, mask-zero-fill and mask-inverted are shared with a4 and
live in common.py.
"""

from grader.catalog import Misconception, register

register(
    Misconception(
        id="merge-heads-without-transpose",
        title="heads merged with a reshape but no transpose back",
        explanation=(
            "`x.reshape(B, T, h * d_h)` on a `(B, h, T, d_h)` tensor reads the heads' rows in "
            "memory order, so the row for position t is stitched from pieces of other "
            "positions. Merging is the inverse of splitting: first put the head axis back next "
            "to the features, `x.transpose(1, 2)` -> `(B, T, h, d_h)`, then "
            "`.reshape(B, T, h * d_h)`, so that position t holds head 0's d_h features, then "
            "head 1's, and so on."
        ),
        section="notes §6, 'Full shape walkthrough of one block' (merge heads: (2,2,4,4) -> (2,4,2,4) -> (2,4,8))",
    ),
    Misconception(
        id="lm-loss-not-shifted",
        title="LM loss against the current token, not the next one",
        explanation=(
            "Your loss scores position t's logits against `tokens[:, t]`, the token the model "
            "has already seen, so a model could minimise it by copying its input. Position t "
            "predicts the *next* token: compare `logits[:, :-1]` with `tokens[:, 1:]` "
            "(y_t = s_{t+1}); the last position has no target."
        ),
        section="slides Week 06, 'Next-token prediction changes visibility and target alignment'; notes §2 (CE = -log ŷ_{x_{t+1}})",
    ),
    Misconception(
        id="lm-loss-includes-padding",
        title="padded targets included in the LM loss",
        explanation=(
            "Your loss still counts the positions whose target is `pad_id`: either as targets "
            "(which trains the model to predict padding) or in the count the mean divides by "
            "(padded terms left out of the sum, but divided by every shifted position B·(T-1)). "
            "Keep only positions whose target `tokens[b, t+1]` is not `pad_id`, in both the sum "
            "and the count (e.g. `ignore_index=pad_id`, or one mask used for both)."
        ),
        section="slides Week 06, 'Padding is a visibility and output-selection problem' (omit padded outputs from the loss)",
    ),
    Misconception(
        id="pool-includes-padding",
        title="mean pooling over padding rows",
        explanation=(
            "Your pooled vector sums all T rows, padding included (as a mean over T, or divided "
            "by lengths[b]). The sequence "
            "representation averages only the real tokens: h̄ = Σ_t m_t h_t / Σ_t m_t with "
            "m_t = 1 for t < lengths[b], i.e. sum the first lengths[b] rows and divide by "
            "lengths[b] (not by T)."
        ),
        section="slides Week 06, 'Task heads select rows or combine them' (sequence classification: mean over real tokens)",
    ),
    Misconception(
        id="pool-divides-by-T",
        title="masked mean pooling divided by T",
        explanation=(
            "Your sum leaves the padding rows out, but you divide by T, so every padding row "
            "still counts as a zero vector and shorter sequences get pooled vectors shrunk "
            "towards 0. Divide by the number of real tokens: h̄ = Σ_t m_t h_t / Σ_t m_t, "
            "i.e. by lengths[b]."
        ),
        section="slides Week 06, 'Task heads select rows or combine them' (mean pooling includes only real tokens)",
    ),
    Misconception(
        id="shape-scores-missing-heads",
        title="attention scores without the heads axis",
        explanation=(
            "With h heads every head has its own T × T score matrix: scores and weights are "
            "`(B, h, T, T)`, not `(B, T, T)`. Q K^T is taken over the last two axes of the "
            "split tensors `(B, h, T, d_h)`, and the head axis rides along like the batch axis."
        ),
        section="notes §6, 'Full shape walkthrough of one block' (scores QK^T: (2,2,4,4) = (B,h,T,T))",
    ),
    Misconception(
        id="shape-ln-stats-per-feature",
        title="LayerNorm statistics per feature (that is BatchNorm)",
        explanation=(
            "Your LayerNorm mean has one entry per feature, `(d,)`: that is averaging down the "
            "batch, BatchNorm's set. LayerNorm normalises each token across its own d features, "
            "so it has one mean and one variance per token vector: shape `(B, T)`."
        ),
        section="notes §6, 'Batch norm vs layer norm — it's entirely about the axis'",
    ),
    Misconception(
        id="shape-bn-stats-per-token",
        title="BatchNorm statistics per token (that is LayerNorm)",
        explanation=(
            "Your BatchNorm mean has one entry per token, `(B, T)`: that is averaging across "
            "features, LayerNorm's set. BatchNorm normalises each feature down the batch (and "
            "sequence), so it has one mean and one variance per feature: shape `(d,)`."
        ),
        section="notes §6, 'Batch norm vs layer norm — it's entirely about the axis'",
    ),
    Misconception(
        id="head-dim-float-division",
        title="d_h computed with `/`, a float",
        explanation=(
            "Some of your shapes hold a float such as 4.0: in Python 3 `d / n_heads` is true "
            "division and always gives a float, even when h divides d. A shape is a tuple of "
            "ints, and torch refuses a float size (`x.view(B, T, h, 4.0)` raises a TypeError), so "
            "the block you describe could not be built. The head width is d_h = d / h in the "
            "notes' algebra; in code write `d // n_heads` (integer division)."
        ),
        section="notes §6, 'Full shape walkthrough of one block' (d_h = d / h = 8 / 2 = 4)",
    ),
    # visibility and loss positions for a task
    Misconception(
        id="task-mask-causal-for-bidirectional-task",
        title="a causal mask where the whole input is available",
        explanation=(
            "Your mask hides the future for tagging or sequence classification. These tasks see "
            "the whole input before they predict (the label of token t, or of the sentence, may "
            "depend on words after t), so bidirectional visibility is legitimate: every real key, "
            "before or after the query. Only next-token prediction must not see the future."
        ),
        section="slides Week 06, 'Task heads select rows or combine them' (bidirectional "
        "visibility when the full input is available) and 'Next-token prediction changes visibility'",
    ),
    Misconception(
        id="task-mask-not-causal",
        title="next-token prediction without the causal mask",
        explanation=(
            "Your next-token mask lets query t see keys after t. The target of position t is the "
            "token at t + 1, which is one of those keys: the model could copy its target. "
            "Combine the causal restriction (key s <= query t) with the padding one."
        ),
        section="slides Week 06, 'Next-token prediction changes visibility and target alignment'",
    ),
    Misconception(
        id="task-mask-padding-ignored",
        title="padded keys left visible",
        explanation=(
            "Your mask lets real queries attend to padded keys. Padding is a visibility problem: "
            "mask padded sources (keys s >= length) for every task and at every layer, or the pad "
            "rows' values leak into the real tokens' outputs."
        ),
        section="slides Week 06, 'Padding is a visibility and output-selection problem'",
    ),
    Misconception(
        id="task-mask-empty-padded-rows",
        title="padded query rows with no visible key",
        explanation=(
            "Your mask also hides every key from the padded queries, so their rows are all False "
            "and their softmax is 0/0 (NaN), which then spreads. The mask restricts keys only: "
            "True where key s < length, for every query row; a padded query's output is left "
            "out later, by the loss and the pooling, not by the mask."
        ),
        section="slides Week 06, 'Padding is a visibility and output-selection problem' (at least "
        "one permitted source per row)",
    ),
    Misconception(
        id="loss-positions-through-last-token",
        title="next-token loss read at the last real token",
        explanation=(
            "Your next-token loss reads positions 0 … length − 1, but the last real token has "
            "no next token to predict: the target of position t is the token at t + 1, so the "
            "loss reads t = 0 … length − 2."
        ),
        section="slides Week 06, 'Next-token prediction changes visibility and target alignment' "
        "(I = 0, …, T − 2)",
    ),
    Misconception(
        id="loss-positions-include-padding",
        title="the loss reads padded positions",
        explanation=(
            "Your loss positions ignore the lengths: padded positions are read as if they were "
            "real. Padding is also an output-selection problem: omit padded outputs from the "
            "loss (tagging reads t < length; next-token prediction t <= length − 2)."
        ),
        section="slides Week 06, 'Padding is a visibility and output-selection problem'",
    ),
    Misconception(
        id="loss-positions-classification-per-token",
        title="sequence classification's loss read at the tokens",
        explanation=(
            "For sequence classification the loss reads one distribution per sentence, after "
            "pooling the real tokens' outputs; no token position is read by the loss itself, so "
            "`task_loss_positions` is all False for it."
        ),
        section="slides Week 06, 'Task heads select rows or combine them' (sequence "
        "classification: one distribution after pooling)",
    ),
    Misconception(
        id="lm-loss-mean-per-sequence",
        title="the loss averaged per sequence, then over the batch",
        explanation=(
            "Your loss matches the mean of each sequence's own mean loss (per-sample losses "
            "averaged, as Keras reports them): a short sequence then weighs as much as a long "
            "one. The handout's loss is one mean over every real target of the batch together, "
            "what torch's cross_entropy(..., ignore_index=pad_id) with its default "
            'reduction="mean" computes: Σ over the real (b, t) of the loss, divided by their '
            "number."
        ),
        section="README, question 4 (the mean over the pairs (b, t))",
    ),
    Misconception(
        id="lm-loss-summed",
        title='the loss summed over the targets (reduction="sum")',
        explanation=(
            "Your loss matches the sum of the real targets' losses, what torch's "
            'cross_entropy(..., reduction="sum") gives (fairseq sums, then divides by the '
            "number of tokens elsewhere). The handout's loss is the mean over the real targets: "
            "the sum divided by their number."
        ),
        section="README, question 4 (the mean over the pairs (b, t))",
    ),
)
