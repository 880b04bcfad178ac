"""The tree Ordered Memory induces of what it reads, from the memory slot it wrote each token at."""

from __future__ import annotations

from collections.abc import Sequence


def tree_from_slots(words: Sequence[str], slots: Sequence[int]):
    """The tree Ordered Memory induces (the official `build_tree`, as `genparse` calls it), bottom-up from the
    memory slot each word was written at (`OrderedMemoryOutput.distances` in `model.py`).

    Read as a shift-reduce parse: before word t (t >= 1) is shifted, the top two subtrees of the stack are merged
    `slots[t] - slots[t-1] + 1` times (when positive: the split point rose, closing constituents); a slot one below
    the previous one merges nothing (a new level). The first word's slot is never read (`genparse` sets it above
    every slot). What is left on the stack is merged at the end.

    Returns:
        a word (one-word sentence) or nested lists of words; `[]` for an empty sentence.
    """
    if len(words) != len(slots):
        raise ValueError(f"{len(words)} words but {len(slots)} slots")
    if not words:
        return []
    stack = [words[0]]
    for t in range(1, len(words)):
        merges = 0 if t == 1 else int(slots[t]) - int(slots[t - 1]) + 1
        for _ in range(min(merges, len(stack) - 1)):
            right = stack.pop()
            stack[-1] = [stack[-1], right]
        stack.append(words[t])
    while len(stack) > 1:
        right = stack.pop()
        stack[-1] = [stack[-1], right]
    return stack[0]
