"""a6 — Pretraining and scale: BPE, BERT masking, next-token targets, parameter counts.

Fill in every function below (replace `raise NotImplementedError`). Read README.md first:
it fixes the conventions (row vectors, -100 = no target, "</w>" handling) and shows worked
examples. You may use numpy, torch and the standard library; return numpy arrays, torch
tensors, lists or Python numbers (the grader converts), with exactly the shapes stated.
"""

from __future__ import annotations

END_OF_WORD = "</w>"  # the extra final symbol of every word in BPE
IGNORE_INDEX = -100  # a position without a target (torch's cross_entropy default ignore_index)


# ---------------------------------------------------------------- BPE (notes §7)


def bpe_learn(word_counts, num_merges):
    """Learn BPE merges from a word-frequency table.

    word_counts: dict {word (str): count (int >= 1)}.  num_merges: int >= 0.
    Returns a list of at most num_merges pairs (left: str, right: str), in the order learned.

    A word starts as its characters followed by one extra symbol "</w>":
    "low" -> ("l", "o", "w", "</w>"). Repeat num_merges times:
      count(a, b) = Σ_words count(word) × (number of adjacent positions holding a, b);
      pick the pair with the highest count, ties to the lexicographically smallest pair
      (compare the tuples (a, b) as Python strings: min(...) over (-count, (a, b)));
      replace every occurrence of a, b (left to right, non-overlapping) by the symbol a + b.
    "</w>" is a symbol like any other: ("t", "</w>") may be merged into "t</w>".
    Stop early when no word has two symbols left (no pair to merge).
    """
    raise NotImplementedError


def bpe_segment(word, merges):
    """Split `word` into subwords: start from its characters + "</w>", apply `merges` in order.

    word: str.  merges: list of (left, right) pairs as returned by bpe_learn.
    Returns a list of str; the last symbol always ends with "</w>" (it is "</w>" itself when
    no merge absorbed it). Example with the README's merges: "lowest" -> ["low", "est</w>"].
    """
    raise NotImplementedError


# ---------------------------------------------------------------- pretraining objectives (notes §7)


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    """BERT's masked-LM corruption.

    tokens: (N,) int.  rng: numpy.random.Generator (draw ALL your randomness from it).
    mask_id: int.  vocab_size: int V.  special_ids: ids that are never selected.  p: float.
    Returns (inputs (N,) int, labels (N,) int).

    Each position whose token is not in special_ids is selected with probability p.
    Selected:   label = the original token;  input = mask_id with probability 0.8,
                a uniform random id in [0, V) with probability 0.1 (it may equal the original),
                the original token (unchanged) with probability 0.1.
    Unselected: label = -100;  input = the original token.
    """
    raise NotImplementedError


def next_token_targets(tokens, pad_id):
    """Inputs and targets of a decoder (GPT) language model.

    tokens: (B, T) int, right-padded with pad_id.  Returns (inputs (B, T-1), targets (B, T-1)):
    inputs = tokens[:, :-1];  targets[b, t] = tokens[b, t+1], or -100 where tokens[b, t+1] == pad_id.
    """
    raise NotImplementedError


def span_corruption(tokens, spans, sentinel_ids):
    """T5's span corruption (notes §7): the inputs and targets of an encoder-decoder.

    tokens: list (or 1-D array) of N token ids. spans: list of (start, length) pairs, sorted,
    non-empty and non-overlapping. sentinel_ids: at least len(spans) + 1 distinct ids
    (<extra_id_0>, <extra_id_1>, …), used in the order given.
    Returns (inputs, targets), two lists of ints:
      inputs  = the tokens with span k replaced by the ONE token sentinel_ids[k];
      targets = for each span k in order: sentinel_ids[k] followed by the span's tokens;
                then one final sentinel, sentinel_ids[len(spans)].
    T5's example: "Thank you for inviting me to your party last week ." with spans
    "for inviting" and "last" gives inputs "Thank you <X> me to your party <Y> week ." and
    targets "<X> for inviting <Y> last <Z>".
    """
    raise NotImplementedError


# ---------------------------------------------------------------- parameter counts (Lecture 7)


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    """Parameter counts of a pre-norm GPT-style decoder, per component and in total.

    Returns a dict of ints with exactly these keys:
      token_embedding      V × d
      position_embedding   max_positions × d (0 positions: rotary, no table)
      attention_per_block  W_Q, W_K, W_V, W_O, each d -> d (+ a bias of size d each when biases)
      ffn_per_block        "gelu": W1 (d -> d_ff), W2 (d_ff -> d);
                           "swiglu": W_gate, W_up (d -> d_ff), W_down (d_ff -> d);
                           each with its bias (size = its output) when biases
      norms_per_block      two norms: "layernorm" 2d each (γ, β), "rmsnorm" d each (γ);
                           norms keep their parameters whatever `biases` says
      per_block            attention_per_block + ffn_per_block + norms_per_block
      blocks               n_layers × per_block
      final_norm           one norm before the LM head
      lm_head              0 when tied_embeddings, else V × d (no bias)
      total                token_embedding + position_embedding + blocks + final_norm + lm_head
    GPT-2 small (50257, 1024, 768, 12, 3072): per_block 7,087,872; total 124,439,808.
    """
    raise NotImplementedError
