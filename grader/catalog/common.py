"""Misconceptions shared by several assignments."""

from grader.catalog import Form, Misconception, register

register(
    Misconception(
        id="uses-library-shortcut",
        title="uses a library shortcut",
        explanation=(
            "This question asks you to write the computation yourself; calling the library "
            "routine that does it skips the part being assessed."
        ),
        section="the assignment README, 'Library shortcuts'",
    ),
    Misconception(
        id="softmax-wrong-axis",
        title="softmax over the wrong axis",
        explanation=(
            "Your weights sum to one down each column instead of along each row: the softmax "
            "ran over the query/batch axis instead of the last (key or vocabulary) axis. Each "
            "row of attention weights is one query's distribution over the keys."
        ),
        section="notes §5, 'Which axis sums to one'",
    ),
    Misconception(
        id="heads-reshape-without-transpose",
        title="heads split with a reshape but no transpose",
        explanation=(
            "`x.view(B, h, T, d_h)` on a `(B, T, d)` tensor mixes positions and features: "
            "head i must take features `i*d_h:(i+1)*d_h` of every position, which is "
            "`view(B, T, h, d_h).transpose(1, 2)`."
        ),
        section="notes §6, 'Shapes through one block'",
    ),
    Misconception(
        id="mask-zero-fill",
        title="masked scores filled with 0 instead of -inf",
        explanation=(
            "A score of 0 is an ordinary score: after the softmax it still gets weight "
            "exp(0) / Σ. Masked positions need -inf (or a very negative number) before the "
            "softmax so that their weight is exactly 0."
        ),
        section="notes §5, 'Masks'",
    ),
    Misconception(
        id="mask-not-boolean",
        title="a mask of 0s and 1s instead of booleans",
        explanation=(
            "Your mask has the right entries, as numbers: the masks here are boolean arrays "
            "(`dtype=bool`, True = may attend). A mask of 0.0/1.0 or 0/1 breaks where masks "
            "are combined or read: `~` on it raises or gives -1 and -2, `m1 & m2` fails on "
            "floats, and `scores[m]` indexes rows 0 and 1 instead of selecting entries. Build it "
            "as booleans (`np.tril(np.ones((T, T), dtype=bool))`, a comparison such as "
            "`np.arange(T) < length`) or convert it with `.astype(bool)`."
        ),
        section="notes §5, 'Masks'",
    ),
    Misconception(
        id="mask-inverted",
        title="mask read the wrong way round",
        explanation=(
            "The boolean mask means True = may attend (torch's boolean `attn_mask`). Your "
            "output attends exactly where it should not. Where your reading leaves a query row "
            "with no key (the last row of a causal mask read the wrong way round), every key of "
            "this query row is masked: the softmax of all −inf is NaN."
        ),
        section="notes §5, 'Masks'",
        forms=(
            Form(
                function="padding_mask",
                explanation=(
                    "Your padding mask is the wrong way round: `padding_mask(lengths, T)[b, t]` is "
                    "True at the real tokens (t < lengths[b]) and False at the padding, the same "
                    "polarity as the attention masks (True = may attend). Yours is True exactly at "
                    "the padding."
                ),
            ),
        ),
    ),
)
