"""crossgym.text.chunks.chunked: the one batching loop (kit's rows.chunked, reverify, the rollout runner)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from crossgym.adapters.kit.rows import CHUNK_ROWS
from crossgym.adapters.kit.rows import chunked as kit_chunked
from crossgym.text import chunked as text_chunked
from crossgym.text.chunks import chunked


def test_lists_of_at_most_size_in_order() -> None:
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked(range(6), 3)) == [[0, 1, 2], [3, 4, 5]]
    assert list(chunked([], 3)) == []
    assert text_chunked is chunked


def test_reads_the_stream_lazily() -> None:
    seen: list[int] = []

    def source() -> Iterator[int]:
        for i in itertools.count():  # endless: only what is asked for may be read
            seen.append(i)
            yield i

    first = next(chunked(source(), 4))
    assert first == [0, 1, 2, 3] and seen == [0, 1, 2, 3]


def test_a_size_below_one_is_an_error_not_an_empty_stream() -> None:
    with pytest.raises(ValueError, match="chunk size"):
        list(chunked(range(3), 0))


def test_kit_keeps_its_name_and_default() -> None:
    assert list(kit_chunked(range(5), 2)) == [[0, 1], [2, 3], [4]]
    assert [len(c) for c in kit_chunked(range(CHUNK_ROWS + 1))] == [CHUNK_ROWS, 1]
