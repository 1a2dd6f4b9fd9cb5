"""Misconceptions of a6 (pretraining and scale): BPE, BERT masking, next-token targets, parameter counts."""

from grader.catalog import Misconception, register

register(
    Misconception(
        id="bpe-no-end-of-word",
        title='BPE without the end-of-word symbol "</w>"',
        explanation=(
            'A word starts as its characters **plus** one extra symbol `"</w>"`: "low" is '
            '`l o w </w>`. Your merges (or segments) never involve `"</w>"` (it is missing, or only '
            "tacked on after merging), so a suffix such as "
            '"est" at the end of a word and "est" inside one become the same subword, and pairs '
            'such as `("t", "</w>")` are never counted. `"</w>"` is a symbol like any other: it '
            'is counted in pairs and merges (`"est" + "</w>"` -> `"est</w>"`).'
        ),
        section="notes §7, 'Subword tokenization (BPE)'; README, 'The end-of-word symbol'",
    ),
    Misconception(
        id="bpe-unweighted-pair-counts",
        title="BPE pair counts not weighted by word counts",
        explanation=(
            "Your merges match counting each word type once. The corpus is a table of word "
            "frequencies: a pair inside a word seen 6 times counts 6, so "
            "count(a, b) = Σ over words of count(word) × (occurrences of a b in the word)."
        ),
        section="notes §7, 'Subword tokenization (BPE)' (most frequent adjacent pair)",
    ),
    Misconception(
        id="bpe-ties-first-counted",
        title="BPE ties broken by the pair counted first",
        explanation=(
            "Your merges match breaking a tie between equally frequent pairs by the pair counted "
            "first (`max(pairs, key=pairs.get)`, as Sennrich's toy BPE and minbpe do). The "
            "handout fixes another rule: among the pairs of the highest count, merge the "
            'lexicographically smallest `(left, right)`, comparing Python strings ("</w>" '
            "sorts before letters), whatever order the words or pairs came in."
        ),
        section="README, BPE, 'Choice' (ties go to the lexicographically smallest pair)",
    ),
    Misconception(
        id="bpe-stops-below-two",
        title="BPE stops when the best pair is seen once",
        explanation=(
            "Your merges stop when the most frequent pair has a count below 2 (subword-nmt's "
            "`--min-frequency 2` default). The handout merges num_merges times and stops early "
            "only when no adjacent pair is left: a pair seen once is still merged."
        ),
        section="README, BPE, 'Repeat num_merges times; stop early when no word has a pair left'",
    ),
    Misconception(
        id="bert-mask-no-random-or-keep",
        title="every selected token becomes [MASK] (no 80/10/10)",
        explanation=(
            "Among the selected tokens, almost all of your inputs are the mask id. BERT replaces "
            "a selected token by [MASK] 80% of the time, by a random token 10%, and leaves it "
            "unchanged 10%, so the model cannot shortcut by only working on [MASK] positions "
            "([MASK] never appears at finetuning time) and must build a representation of every token."
        ),
        section="notes §7, 'Encoders (BERT)' (the 80/10/10 trick)",
    ),
    Misconception(
        id="bert-labels-all-positions",
        title="MLM labels at every position",
        explanation=(
            "Your labels hold the original token at (nearly) every position. Only the selected "
            "~15% carry a label; every other position gets -100 (torch's ignore_index), so the "
            "loss is taken only where the model had to reconstruct something."
        ),
        section="notes §7, 'Encoders (BERT)' (masked language modeling)",
    ),
    Misconception(
        id="bert-masks-specials",
        title="special tokens selected for masking",
        explanation=(
            "Some of your selected positions hold special tokens (such as [CLS], [SEP], padding). "
            "Positions whose token is in `special_ids` are never selected: their label is -100 "
            "and their input is unchanged. Only ordinary tokens are selected with probability p."
        ),
        section="notes §7, 'Encoders (BERT)'",
    ),
    Misconception(
        id="lm-targets-not-shifted",
        title="next-token targets not shifted",
        explanation=(
            "Your targets are the input tokens themselves, so the model would learn to copy. "
            "A decoder predicts the *next* token: inputs are tokens[:, :-1] and the target at "
            "position t is tokens[:, t + 1] (y_t = s_{t+1})."
        ),
        section="notes §7, 'Decoders (GPT)'; notes §2 (LM loss -log ŷ_{x_{t+1}})",
    ),
    Misconception(
        id="lm-inputs-not-truncated",
        title="next-token inputs not truncated",
        explanation=(
            "Your targets are right, but your inputs are the whole rows, shape (B, T): the last "
            "token has no next token to predict, so the inputs are tokens[:, :-1], shape "
            "(B, T-1), one per target (y_t = s_{t+1})."
        ),
        section="notes §7, 'Decoders (GPT)'; notes §2 (LM loss -log ŷ_{x_{t+1}})",
    ),
    Misconception(
        id="lm-targets-padding-kept",
        title="padding kept as a next-token target",
        explanation=(
            "Your targets keep pad_id where the next token is padding, so the loss would train "
            "the model to predict padding. Those targets must be -100 (torch's ignore_index), "
            "which cross_entropy skips."
        ),
        section="notes §7, 'Decoders (GPT)'",
    ),
    Misconception(
        id="params-lm-head-counted-when-tied",
        title="LM head counted although tied",
        explanation=(
            "With tied embeddings the LM head *is* the token embedding matrix W_E (W_U = W_E): "
            "it adds 0 parameters. Count V × d for the head only when it is untied."
        ),
        section="Lecture 7 slides, 'Parameter Count: Total' (LM Head: 0 (tied))",
    ),
    Misconception(
        id="params-missing-biases",
        title="biases of the linear layers not counted",
        explanation=(
            "Your counts leave out biases of the linear layers. With biases, Q, K, V and the "
            "output projection each add d (attention 4d² + 4d), and the FFN adds d_ff + d "
            "(2 d d_ff + d_ff + d): a GPT-2 block is 12d² + 13d, not 12d² + 4d."
        ),
        section="Lecture 7 slides, 'Attention Parameters' and 'FFN Parameters'",
    ),
    Misconception(
        id="params-missing-norms",
        title="normalization parameters not counted",
        explanation=(
            "Your counts leave out norms. Each LayerNorm has γ and β (2d), each RMSNorm γ "
            "only (d); there are two per block (before attention, before the FFN) and one final "
            "norm before the LM head: count all of them."
        ),
        section="Lecture 7 slides, 'Parameter Count: Per Block' (LayerNorm 1 and 2) and 'RMSNorm'",
    ),
    Misconception(
        id="params-missing-position-embedding",
        title="learned position embeddings not counted",
        explanation=(
            "A learned position table P has L_max × d parameters (GPT-2: 1024 × 768 = 786,432). "
            "Only rotary or sinusoidal positions (max_positions = 0 here) add nothing."
        ),
        section="Lecture 7 slides, 'Learned Positional Embeddings' and 'Parameter Count: Embeddings'",
    ),
    Misconception(
        id="params-swiglu-two-matrices",
        title="SwiGLU FFN counted with two matrices",
        explanation=(
            "SwiGLU has three matrices, W_gate and W_up (d -> d_ff) and W_down (d_ff -> d): "
            "3 d d_ff weights, not the 2 d d_ff of a GELU FFN."
        ),
        section="Lecture 7 slides, 'SwiGLU: Swish + Gated Linear Unit'",
    ),
    # T5 span corruption
    Misconception(
        id="span-no-final-sentinel",
        title="targets without the final sentinel",
        explanation=(
            "T5's targets end with one more sentinel after the last span (\"<X> for inviting <Y> last "
            '<Z>"): it marks the end of the targets.'
        ),
        section="notes §7, 'Encoder–decoders (T5) — span corruption'; Raffel et al. (2020), Fig. 2",
    ),
    Misconception(
        id="span-sentinels-out-of-order",
        title="sentinels in the wrong order",
        explanation=(
            "Span k gets sentinel_ids[k] (<extra_id_0> for the first span, <extra_id_1> for the "
            "second, …) in the inputs and the targets, and the final sentinel is the next one. Your "
            "sentinels run in the other order."
        ),
        section="notes §7, 'Encoder–decoders (T5) — span corruption'; Raffel et al. (2020), Fig. 2",
    ),
    Misconception(
        id="span-tokens-left-in-inputs",
        title="the span's tokens left in the inputs",
        explanation=(
            "Each span is REPLACED by its sentinel: the inputs keep only the other tokens "
            '("Thank you <X> me to your party <Y> week ."). Left in, the removed words are visible '
            "to the encoder and the targets are trivial to copy."
        ),
        section="notes §7, 'Encoder–decoders (T5) — span corruption'",
    ),
    Misconception(
        id="bpe-end-of-word-glued",
        title='"</w>" glued to the last character (subword-nmt\'s "w</w>")',
        explanation=(
            'Your merges (or segments) match words that start as `l o w</w>`: "</w>" glued to '
            "the last character, as subword-nmt's learn_bpe and apply_bpe write them. The "
            'handout makes "</w>" a symbol of its own: "low" starts as `l o w </w>` (four '
            'symbols), so `("w", "</w>")` is a pair that is counted and can be merged, and a '
            'merge such as `("o", "w</w>")` never arises from the initial symbols.'
        ),
        section="README, 'The end-of-word symbol' (its own initial symbol, not a suffix)",
    ),
    Misconception(
        id="bpe-ties-largest-pair",
        title="BPE ties broken by the largest pair",
        explanation=(
            "Your merges match breaking a tie between equally frequent pairs by the "
            "lexicographically LARGEST pair (`max(stats, key=lambda x: (stats[x], x))`, as "
            "subword-nmt's learn_bpe does). The handout breaks ties the other way: among the "
            "pairs of the highest count, merge the lexicographically smallest `(left, right)`, "
            'comparing Python strings ("</w>" sorts before letters).'
        ),
        section="README, BPE, 'Choice' (ties go to the lexicographically smallest pair)",
    ),
)
