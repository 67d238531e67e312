"""crossgym.text.chunks.chunked: the one batching loop (kit's rows.chunked, reverify, the rollout runner), and
tapered, its form for chunks spread over parallel workers (verify-batch --ray's shards)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from crossgym.adapters.kit.rows import CHUNK_ROWS
from crossgym.adapters.kit.rows import chunked as kit_chunked
from crossgym.text import chunked as text_chunked
from crossgym.text.chunks import chunked, tapered


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


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 3000, 10_000])
@pytest.mark.parametrize("workers", [1, 2, 8])
def test_tapered_gives_every_item_once_in_order_full_chunks_then_a_shrinking_tail(n: int, workers: int) -> None:
    out = list(tapered(range(n), 256, workers))
    assert [x for c in out for x in c] == list(range(n))
    sizes = [len(c) for c in out]
    assert all(0 < s <= 256 for s in sizes)
    tail = next((k for k, s in enumerate(sizes) if s < 256), len(sizes))
    assert all(s == 256 for s in sizes[:tail])  # full chunks while more than `workers` of them are to come
    assert sum(sizes[tail:]) < (workers + 1) * 256  # the tapered stretch is at most that much
    assert sizes[tail:] == sorted(sizes[tail:], reverse=True)  # it only shrinks
    assert all(s >= 64 for s in sizes[tail:-1])  # down to size // 4, then the rest


def test_tapered_ends_in_small_chunks_where_chunked_ends_in_a_full_one() -> None:
    assert [len(c) for c in chunked(range(3000), 256)][-2:] == [256, 184]
    sizes = [len(c) for c in tapered(range(3000), 256, 2)]
    assert sizes == [256] * 9 + [174, 131, 98, 74, 64, 64, 64, 27]


def test_tapered_reads_only_workers_chunks_ahead() -> None:
    seen: list[int] = []

    def source() -> Iterator[int]:
        for i in itertools.count():
            seen.append(i)
            yield i

    first = next(tapered(source(), 4, 3))
    assert first == [0, 1, 2, 3] and len(seen) == (3 + 1) * 4


def test_tapered_refuses_sizes_and_workers_below_one() -> None:
    with pytest.raises(ValueError, match="workers"):
        list(tapered(range(3), 2, 0))
    with pytest.raises(ValueError, match="chunk size"):
        list(tapered(range(3), 0, 2))
