"""Bounded batches of a stream: ``chunked(items, size)`` yields lists of at most ``size`` items, reading ``items``
lazily (memory is one chunk, whatever the length of the stream). At the bottom layer so every layer may use it:
scoring's reverify, rollout's runner, kit's dataset rows (``crossgym.adapters.kit.rows.chunked``) and serve's
verify-batch all batch through this one loop."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size`` (the last one shorter; none for no items). ``size`` must be >= 1."""
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk
