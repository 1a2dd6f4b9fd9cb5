"""Byte-pair encoding: learn merges from word counts, segment a word (notes §7; Sennrich et al. 2016).

The reading of the a6 handout, fixed here:
- A word starts as its characters followed by one extra symbol "</w>" (its own initial
  symbol, as in Sennrich et al.'s Algorithm 1: "l o w </w>"). "</w>" merges like any other
  symbol, so ("t", "</w>") -> "t</w>" is a possible merge and "est</w>" a possible symbol.
- Consequently the last symbol of a segmentation always ends with "</w>" ("carries" it):
  either the bare "</w>" (no merge absorbed it) or a merged symbol such as "est</w>".
- Pair counts: every adjacent position counts (overlapping pairs too: "a a a" holds
  ("a", "a") twice), weighted by the word's count; words with count 0 contribute nothing.
- Choice: the highest count; ties go to the lexicographically smallest pair, comparing the
  tuples (left, right) as Python strings ("</w>" sorts before letters).
- Applying a merge: scan left to right, replacing each non-overlapping occurrence
  ("a a a" merged by ("a", "a") becomes "aa a").
- Stop early when no adjacent pair with a positive count is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

END_OF_WORD = "</w>"

Pair = tuple[str, str]


def initial_symbols(word: str) -> tuple[str, ...]:
    """A word as its characters plus the end-of-word symbol: "low" -> ("l", "o", "w", "</w>")."""
    return (*word, END_OF_WORD)


def glued_symbols(word: str) -> tuple[str, ...]:
    """subword-nmt's start: "</w>" glued to the last character, "low" -> ("l", "o", "w</w>").
    Not the handout's rule (there "</w>" is a symbol of its own)."""
    return (*word[:-1], word[-1] + END_OF_WORD) if word else (END_OF_WORD,)


def pair_counts(corpus: dict[tuple[str, ...], int]) -> Counter[Pair]:
    """count(a, b) = Σ_words count(word) × #{adjacent (a, b) in word}."""
    counts: Counter[Pair] = Counter()
    for symbols, n in corpus.items():
        if n <= 0:
            continue
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += n
    return counts


def best_pair(counts: Counter[Pair]) -> Pair | None:
    """The most frequent pair, ties to the lexicographically smallest; None when none is left."""
    live = [(pair, n) for pair, n in counts.items() if n > 0]
    if not live:
        return None
    return min(live, key=lambda item: (-item[1], item[0]))[0]


def first_counted_pair(counts: Counter[Pair]) -> Pair | None:
    """The most frequent pair, ties to the pair counted first (Sennrich's toy BPE and minbpe:
    `max(pairs, key=pairs.get)`); None when none is left. Not the handout's rule."""
    live = {pair: n for pair, n in counts.items() if n > 0}
    return max(live, key=live.__getitem__) if live else None


def largest_pair(counts: Counter[Pair]) -> Pair | None:
    """The most frequent pair, ties to the lexicographically LARGEST (subword-nmt's learn_bpe:
    `max(stats, key=lambda x: (stats[x], x))`); None when none is left. Not the handout's rule."""
    live = {pair: n for pair, n in counts.items() if n > 0}
    return max(live, key=lambda pair: (live[pair], pair)) if live else None


def apply_merge(symbols: tuple[str, ...], pair: Pair) -> tuple[str, ...]:
    """Replace each non-overlapping (a, b), scanning left to right, by the symbol a+b."""
    a, b = pair
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def bpe_learn(
    word_counts: dict[str, int],
    num_merges: int,
    *,
    choose: Callable[[Counter[Pair]], Pair | None] = best_pair,
    min_count: int = 1,
    initial: Callable[[str], tuple[str, ...]] = initial_symbols,
) -> list[Pair]:
    """Greedily merge the most frequent adjacent pair (weighted by word counts), num_merges times.

    Hooks: `choose` picks the pair to merge from the counts; learning stops when the chosen
    pair's count is below `min_count` (subword-nmt's learn_bpe stops below 2); `initial(word)`
    is a word's first symbols (`glued_symbols`: subword-nmt's "w</w>")."""
    if num_merges < 0:
        raise ValueError(f"expected num_merges >= 0, got {num_merges}")
    corpus: Counter[tuple[str, ...]] = Counter()
    for word, n in word_counts.items():
        if n < 0:
            raise ValueError(f"expected non-negative word counts, got {word!r}: {n}")
        corpus[initial(word)] += n
    merges: list[Pair] = []
    for _ in range(num_merges):
        counts = pair_counts(corpus)
        pair = choose(counts)
        if pair is None or counts[pair] < min_count:
            break
        merges.append(pair)
        merged: Counter[tuple[str, ...]] = Counter()
        for symbols, n in corpus.items():
            merged[apply_merge(symbols, pair)] += n
        corpus = merged
    return merges


def bpe_segment(
    word: str,
    merges: Iterable[Pair],
    *,
    initial: Callable[[str], tuple[str, ...]] = initial_symbols,
) -> list[str]:
    """Apply the merges in learned order to the word's characters + "</w>"; the last symbol ends
    in "</w>". Hook: `initial(word)` as in `bpe_learn`."""
    symbols = initial(word)
    for pair in merges:
        symbols = apply_merge(symbols, tuple(pair))
    return list(symbols)
