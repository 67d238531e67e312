"""An eval's metrics and report stream its store: on 20k stored rollouts no more than a few hundred Rollout objects
are ever alive (the report's sample candidates), the metrics equal those built from the whole list, and the store
is read back in task then sample order whatever order its records were appended in."""

from __future__ import annotations

import json
import random
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

from crossgym.eval.metrics import compute_metrics
from crossgym.eval.report import write_report
from crossgym.eval.run import StoredRollouts
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec
from crossgym.rollout.config import keyed_hash, rollout_key
from crossgym.rollout.store import RolloutStore

HASH = "cafe0123"


def _tasks(n_tasks: int) -> list[Task]:
    return [Task(id=f"t{i}", prompt=f"question {i}", answer=None, verifier=VerifierSpec(("va", "vb")[i % 2]),
                 metadata={"source": f"s{i % 5}"}) for i in range(n_tasks)]


def _rollout(task: Task, j: int, rng: random.Random, config_hash: str = HASH) -> Rollout:
    x = rng.random()
    if x < 0.05:
        verdict = Verdict.timeout(5)
    elif x < 0.1:
        verdict = Verdict.malformed(f"no answer in {rng.randrange(99)} chars")
    else:
        reward = rng.choice([0.0, 0.5, 1.0]) if task.metadata["source"] != "s4" else rng.random()  # s4: many values
        verdict = Verdict.ok(reward, reason=f"answer {rng.randrange(9)} (expected 7)",
                             components={"format": rng.choice([0.0, 1.0]), "value": reward})
    return Rollout(task=task, completion=Completion.from_text("answer " * rng.randrange(1, 40)), verdict=verdict,
                   timings={"generate_s": 0.25, "verify_s": 0.125},
                   provenance={"key": rollout_key(task.id, j, keyed_hash(config_hash, task)), "sampling": {"max_tokens": 64}})


def _store(path: Path, tasks: list[Task], n: int, *, order: list[tuple[int, int]] | None = None) -> None:
    rng = random.Random(7)
    rollouts = {(i, j): _rollout(t, j, rng) for i, t in enumerate(tasks) for j in range(n)}
    with RolloutStore(path) as store:
        store.append([_rollout(tasks[0], 0, rng, config_hash="other")])  # another settings' record: skipped
        keys = order or list(rollouts)
        for start in range(0, len(keys), 1000):
            store.append([rollouts[k] for k in keys[start:start + 1000]])


class _Counted(StoredRollouts):
    """StoredRollouts that counts the Rollout objects it has handed out that are still alive."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.alive = self.most_alive = self.read = 0

    def _gone(self) -> None:
        self.alive -= 1

    def __iter__(self) -> Iterator[Rollout]:
        for r in super().__iter__():
            weakref.finalize(r, self._gone)
            self.alive += 1
            self.read += 1
            self.most_alive = max(self.most_alive, self.alive)
            yield r
            del r


def test_metrics_and_report_of_20k_stored_rollouts_hold_a_few_hundred(tmp_path: Path) -> None:
    tasks, n = _tasks(400), 50  # few tasks: the bootstrap over tasks (1000 resamples) is not what is measured
    path = tmp_path / "rollouts.jsonl"
    _store(path, tasks, n)
    stored = _Counted(path, tasks, n, HASH)
    assert len(stored) == 20_000
    started = time.perf_counter()
    metrics = compute_metrics(stored)
    html = write_report(tmp_path / "report", metrics, stored, run_info={"model": "m"}).read_text()
    elapsed = time.perf_counter() - started
    assert metrics["n_rollouts"] == 20_000 and metrics["n_tasks"] == 400 and "Sample rollouts" in html
    assert stored.read >= 3 * 20_000  # metrics in two passes, the report in one or two: all streamed
    assert stored.most_alive <= 300, stored.most_alive  # the report's sample candidates, not 20k
    assert elapsed < 60
    # the same document as from the whole list in memory (the report's sameness: tests/eval/test_failures.py)
    held = list(stored)
    assert json.dumps(compute_metrics(held), default=str) == json.dumps(metrics, default=str)


def test_store_is_read_in_task_then_sample_order(tmp_path: Path) -> None:
    tasks, n = _tasks(30), 3
    order = [(i, j) for i in range(30) for j in range(3)]
    random.Random(1).shuffle(order)  # appended out of order (a resumed eval over another task list)
    path = tmp_path / "rollouts.jsonl"
    _store(path, tasks, n, order=order)
    stored = StoredRollouts(path, tasks, n, HASH)
    keys = [r.provenance["key"] for r in stored]
    assert keys == [rollout_key(t.id, j, keyed_hash(HASH, t)) for t in tasks for j in range(n)]
    assert stored[4].provenance["key"] == keys[4] and [r.provenance["key"] for r in stored[2:5]] == keys[2:5]
    assert len(StoredRollouts(path, tasks[:10], 2, HASH)) == 20  # only the tasks and samples asked for
