"""Misconceptions of a7 (text classification and n-gram language models): cosine similarity,
softmax cross-entropy, the Deep Averaging Network, add-k n-grams and perplexity.

Reused from other assignments: `softmax-unstable` (a1), `perplexity-base-2` (a2).

The conventions of the implementations students copy that the handout excludes (issue 33):
torch's reduction="sum" (`ce-batch-summed`), nltk.lm's pad_both_ends
(`ngram-end-padded-n-minus-1`), Hugging Face evaluate's mean_perplexity
(`perplexity-averaged-per-sentence`), SRILM's ppl1 (`perplexity-n-excludes-end`) and SRILM's
and KenLM's perplexity without the OOVs (`perplexity-skips-unknown-words`).
"""

from grader.catalog import Misconception, register

register(
    Misconception(
        id="cosine-missing-norm",
        title="cosine divided by only one of the two norms",
        explanation=(
            "Your similarities are the dot products divided by the length of one vector only. "
            "The cosine divides by both: cos(a, b) = a·b / (‖a‖ ‖b‖), so it depends only on the "
            "directions and lies in [−1, 1]; with one norm left in, a longer vector still scores "
            "higher, as with the raw dot product."
        ),
        section="Lecture 7 study guide, 'cosine similarity vs dot product'; README, 'Cosine similarity'",
    ),
    Misconception(
        id="cosine-is-dot-product",
        title="the raw dot product instead of the cosine",
        explanation=(
            "Your similarities are the dot products a·b, not divided by any norm. The dot product "
            "grows with the vectors' lengths (frequent words have long vectors), so it ranks "
            "neighbours by length as much as by direction; the cosine a·b / (‖a‖ ‖b‖) compares "
            "directions only."
        ),
        section="Lecture 7 study guide, 'cosine similarity vs dot product'; README, 'Cosine similarity'",
    ),
    Misconception(
        id="ce-grad-sign",
        title="cross-entropy gradient with the wrong sign (e_y − p)",
        explanation=(
            "Your gradient is e_y − p: the gradient of the log-probability log p_y, which gradient "
            "ascent would follow. The loss is L = −log p_y, and ∂L/∂z = p − e_y: it is positive "
            "for the wrong classes (push their logits down) and p_y − 1 < 0 for the true one."
        ),
        section="Lecture 7 study guide, 'Softmax' and 'Cross-entropy loss'; README, 'Softmax cross-entropy'",
    ),
    Misconception(
        id="ce-grad-not-averaged",
        title="batch gradient without the 1/B",
        explanation=(
            "Your loss is the mean over the batch, but your gradient is p − e_y for every row, B "
            "times too large. The gradient of a mean carries its 1/B: ∂L/∂z_b = (p_b − e_{y_b}) / B."
        ),
        section="README, 'Softmax cross-entropy' (the batch convention)",
    ),
    Misconception(
        id="dan-average-includes-padding",
        title="the DAN averages over the padding too",
        explanation=(
            "Your sentence vector averages all T positions, padding included (a mean over T, or "
            "the padded rows summed in). A DAN averages the embeddings of the real tokens only: "
            "avg_b = Σ_t m_bt E[x_bt] / Σ_t m_bt, with m_bt = 1 where `mask` is True."
        ),
        section="Lecture 7 study guide, 'Deep Averaging Networks'; Week 06 slides, 'Padding is a "
        "visibility and output-selection problem'",
    ),
    Misconception(
        id="dan-repeated-token-once",
        title="a repeated token's embedding gradient counted once",
        explanation=(
            "Your gradient for the embedding rows matches adding each distinct token once, but a "
            "token that occurs twice in a sentence enters the average twice, so its row of "
            "∂L/∂E receives ∂L/∂avg / n_b twice. In NumPy, `gE[ids] += rows` keeps only one of "
            "the repeated writes; `np.add.at(gE, ids, rows)` adds every one."
        ),
        section="README, 'The DAN backward pass'; notes §1 (a repeated index counts each time)",
    ),
    Misconception(
        id="dan-relu-grad-missing",
        title="the ReLU's derivative left out of the backward pass",
        explanation=(
            "Your gradients match passing ∂L/∂h straight through to the hidden layer's "
            "pre-activation z, as if h = z. h = relu(z) lets a gradient through only where "
            "z > 0: g_z = (g_logits W2) ⊙ [z > 0]. W1, b1 and the embeddings get theirs from "
            "that g_z, so a hidden unit that was off (z ≤ 0) passes nothing back."
        ),
        section="README, 'The DAN backward pass'; Lecture 7 study guide, 'Deep Averaging Networks'",
    ),
    Misconception(
        id="addk-missing-v",
        title="add-k smoothing without k·V in the denominator",
        explanation=(
            "You added k to the count on top but not k·V below: (c(context, w) + k) / c(context) "
            "is not a distribution (summed over the V words it exceeds 1). Each of the V words "
            "gets k extra counts, so the context gets k·V: "
            "P(w | context) = (c(context, w) + k) / (c(context) + k·V)."
        ),
        section="Lecture 7 study guide, 'N-gram models'; README, 'Add-k smoothing'",
    ),
    Misconception(
        id="perplexity-missing-end-token",
        title='perplexity without predicting "</s>"',
        explanation=(
            'Your perplexity leaves out the prediction of each sentence\'s "</s>". The model '
            'also has to predict where the sentence ends: N counts every word and every "</s>", '
            'and log P("</s>" | context) is one of the terms.'
        ),
        section="Lecture 7 study guide, 'Perplexity'; README, 'Perplexity'",
    ),
    Misconception(
        id="ngram-missing-start-padding",
        title='n-grams without the "<s>" padding in front',
        explanation=(
            'Your n-grams match sentences padded with fewer than n − 1 "<s>" in front (or none), '
            "so the first words of a sentence are never counted (or predicted) after their "
            'start context. Pad every sentence with n − 1 "<s>" before it and one "</s>" after '
            'it: for a bigram model, "the cat" is <s> the cat </s>, with the bigrams '
            "(<s>, the), (the, cat), (cat, </s>)."
        ),
        section="Lecture 7 study guide, 'N-gram models'; README, 'Padding'",
    ),
    Misconception(
        id="ngram-missing-end-padding",
        title='n-grams without the "</s>" at the end',
        explanation=(
            'Your counts match sentences padded with "<s>" in front but no "</s>" after them, '
            "so no n-gram ends a sentence and the model can never predict where one stops. "
            'Pad every sentence with n − 1 "<s>" before it and one "</s>" after it: for a '
            'bigram model, "the cat" gives (<s>, the), (the, cat), (cat, </s>).'
        ),
        section="Lecture 7 study guide, 'N-gram models'; README, 'Padding'",
    ),
    Misconception(
        id="ce-batch-summed",
        title="the batch's losses summed, not averaged (torch's reduction=\"sum\")",
        explanation=(
            "Your loss is the sum of the B examples' losses and your gradient p − e_y in every "
            'row: what torch.nn.functional.cross_entropy(..., reduction="sum") and its '
            'gradient give. The handout uses torch\'s default, reduction="mean": the loss is '
            "the mean (1/B) Σ_b −log p_{b, y_b} and its gradient carries the 1/B, "
            "(p_b − e_{y_b}) / B."
        ),
        section="README, 'Softmax cross-entropy' (the batch convention)",
    ),
    Misconception(
        id="ngram-end-padded-n-minus-1",
        title='n − 1 "</s>" at the end (nltk.lm\'s pad_both_ends)',
        explanation=(
            'Your n-grams match sentences padded with n − 1 "</s>" at the end, as nltk.lm\'s '
            "pad_both_ends and padded_everygram_pipeline pad them (nltk then also predicts the "
            '"</s>" after "</s>"). The handout pads n − 1 "<s>" in front but ONE "</s>" at the '
            'end, whatever n is: the end of a sentence is one event. For trigrams, "the cat" is '
            "<s> <s> the cat </s>, whose last trigram is (the, cat, </s>); there is no "
            "(cat, </s>, </s>)."
        ),
        section="README, 'Padding' (questions 5 and 7)",
    ),
    Misconception(
        id="perplexity-averaged-per-sentence",
        title="the perplexity averaged sentence by sentence",
        explanation=(
            "Your perplexity matches the mean of each sentence's own perplexity, as Hugging Face "
            "evaluate's mean_perplexity averages them. That weights a short sentence as much as "
            "a long one. "
            "The handout's perplexity is one number over all the predicted tokens together: "
            "PPL = exp(−(1/N) Σ_i log P(w_i | context_i)), N the predicted tokens of every "
            "sentence."
        ),
        section="Lecture 7 study guide, 'Perplexity'; README, 'Perplexity'",
    ),
    Misconception(
        id="perplexity-n-excludes-end",
        title='N counts the words but not the "</s>" (SRILM\'s ppl1)',
        explanation=(
            'Your perplexity sums the log-probabilities of every word and every "</s>", but '
            "divides by the number of words only, as SRILM's ppl1 does. In the handout the "
            '"</s>" predictions are tokens like the others: N counts each sentence\'s words '
            'plus its "</s>"; the same tokens are in the sum and in N.'
        ),
        section="Lecture 7 study guide, 'Perplexity'; README, 'Perplexity'",
    ),
    Misconception(
        id="perplexity-skips-unknown-words",
        title="the unknown words left out of the perplexity (SRILM's OOVs)",
        explanation=(
            "Your perplexity matches the one computed without the words the training counts "
            "never saw: SRILM leaves out-of-vocabulary words out of its ppl, and KenLM reports "
            'a perplexity "excluding OOVs". That makes a model look better the more words '
            "it does not know. In the handout every word of a test sentence is predicted: an "
            "unseen word gets the add-k probability (0 + k) / (c(context) + k·V), and it counts "
            "in N."
        ),
        section="README, 'Perplexity' and 'Add-k smoothing'",
    ),
)
