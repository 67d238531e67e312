"""The append-only rollout store: durable batches, keys, torn tails, one writer."""

from __future__ import annotations

import os

import pytest

from crossgym.protocol import Completion, ConfigError, Rollout, Task, Verdict, VerifierSpec
from crossgym.rollout.store import RolloutStore, read_rollouts


def _rollout(i: int) -> Rollout:
    task = Task(id=f"t{i}", prompt="hi", answer=1, verifier=VerifierSpec("exact_match"), metadata={"source": "s"})
    return Rollout(task=task, completion=Completion.from_text(f"answer {i}"), verdict=Verdict.ok(i % 2),
                   timings={"generate_s": 0.5}, provenance={"key": f"t{i}#0@h"})


def test_append_is_fsynced_per_batch_and_reads_back(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    with RolloutStore(tmp_path / "r.jsonl") as store:
        store.append([_rollout(0), _rollout(1)])
        store.append([_rollout(2)])
        assert len(synced) == 2
        assert store.keys() == {"t0#0@h", "t1#0@h", "t2#0@h"}
    assert read_rollouts(tmp_path / "r.jsonl") == [_rollout(0), _rollout(1), _rollout(2)]


def test_a_torn_last_line_is_cut_before_appending(tmp_path):
    path = tmp_path / "r.jsonl"
    with RolloutStore(path) as store:
        store.append([_rollout(0)])
    with path.open("a") as f:
        f.write('{"task": {"id": "t1", "prom')  # the run died mid-write
    store = RolloutStore(path)
    assert store.keys() == {"t0#0@h"}
    with store:
        store.append([_rollout(1)])
    assert [r.task.id for r in read_rollouts(path)] == ["t0", "t1"]
    assert path.read_text().count("\n") == 2


def test_one_writer_at_a_time(tmp_path):
    path = tmp_path / "r.jsonl"
    with RolloutStore(path):
        with pytest.raises(ConfigError, match="another run is writing"):
            RolloutStore(path).open()
    RolloutStore(path).open().close()  # free again once the first writer closed


def test_a_store_is_never_a_fifo(tmp_path):
    import stat

    os.mkfifo(tmp_path / "rollouts.jsonl")
    with pytest.raises(ConfigError, match="rollouts.jsonl: is not a regular file"):
        RolloutStore(tmp_path / "rollouts.jsonl").open()
    assert stat.S_ISFIFO(os.stat(tmp_path / "rollouts.jsonl").st_mode)
