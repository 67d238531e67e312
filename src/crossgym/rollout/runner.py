"""The rollout runner: tasks x n samples through environments and an engine, verified while generation goes on.

Episodes are played in batches. Within a batch, every active episode's next turn goes to the engine together
(identical prompts, such as a task's n first turns, become one call with n samples). A finished batch is handed to
a verification thread pool and the next batch starts generating at once; finished batches are written to the
store, in order, each flushed and fsync'd. Rollouts already in the store under the same key are not redone.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError, CrossgymError, VerifierError
from crossgym.protocol.interfaces import InferenceEngine
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task
from crossgym.rollout.config import RolloutConfig, keyed_hash, provenance, rollout_key
from crossgym.rollout.driver import Episode, episode_seed
from crossgym.rollout.store import RolloutStore, iter_records
from crossgym.rollout.tasks import episode_settings
from crossgym.text.chunks import chunked

log = logging.getLogger(__name__)

#: the environment name recorded when a task's env is not registered and the runner plays one turn itself
BUILTIN_SINGLE_TURN = "single_turn (built in)"

#: progress(done, total): rollouts finished (resumed ones included) out of tasks x n
Progress = Callable[[int, int], None]


class RolloutRunner:
    """Runs ``config`` over tasks with ``engine``; ``batch_size`` episodes per batch, ``verify_workers`` threads."""

    def __init__(self, engine: InferenceEngine, config: RolloutConfig, *, store: RolloutStore | None = None,
                 batch_size: int = 32, verify_workers: int = 4, max_pending: int = 2,
                 progress: Progress | None = None) -> None:
        self.engine = engine
        self.config = config
        self.store = store
        self.batch_size = max(1, batch_size)
        self.verify_workers = max(1, verify_workers)
        self.max_pending = max(1, max_pending)
        self.progress = progress
        self.resumed = 0  # how many of the last run's rollouts the store held already
        self.config_hash = config.hash()
        self._keyed_hashes: dict[int, str] = {}
        self._unregistered_said: set[str] = set()  # per Task object of the current run (keyed_hash is a digest)
        self._env_names: set[str] | None = None

    # ------------------------------------------------------------------ set-up
    def _env_for(self, task: Task) -> tuple[Any, str]:
        """A fresh environment for ``task`` (the config's, else the task's own if registered) or None."""
        from crossgym.api import load_environment
        from crossgym.plugins.manager import registry

        if self._env_names is None:
            self._env_names = set(registry("environments").names())
        # a blend part's environment settings travel with its tasks and win over the config's
        name, params, part_turns = episode_settings(task, env=self.config.environment,
                                                    params=self.config.env_params)
        if part_turns is not None:
            params.setdefault("max_turns", part_turns)
        if name not in self._env_names:
            if self.config.environment or name != task.env:  # asked for by name: unknown is an error
                registry("environments").entry(name)
            if name not in self._unregistered_said:  # a task's own env another install registers: said once
                self._unregistered_said.add(name)
                log.warning("task %r names environment %r, which is not registered here: its episodes are played "
                            "single-turn (install the plugin that registers it, or set environment.name)",
                            task.id, name)
            return None, BUILTIN_SINGLE_TURN
        return load_environment(name, **params), name

    def _preflight(self, tasks: Sequence[Task]) -> dict[str, Any]:
        """Build every verifier the tasks name before generating anything: a bad name fails in one line."""
        from crossgym.api import load_verifier

        verifiers = {}
        for t in tasks:
            key = t.verifier.key()
            if key not in verifiers:
                try:
                    verifiers[key] = load_verifier(t.verifier)
                except ConfigError as exc:  # and which task asked for it: the first to name it
                    raise type(exc)(exc.message, where=f"task {t.id!r}: verifier", fix=exc.fix) from None
                except VerifierError as exc:
                    raise VerifierError(f"task {t.id!r}: {exc}") from None
        return verifiers

    # ------------------------------------------------------------------ the run
    def run(self, tasks: Sequence[Task]) -> list[Rollout]:
        """Rollouts for every task and sample index, resumed ones included, in task then sample order."""
        tasks = list(tasks)
        finished: dict[str, Rollout] = {}
        done_keys = self._generate(tasks, finished)

        def wanted() -> Iterator[str]:
            return (key for _, _, key in self._wanted(tasks))

        # the resumed ones are read back from the store (only those this run wants)
        missing = {key for key in wanted() if key in done_keys and key not in finished} if done_keys else set()
        if missing and self.store is not None:
            for doc in iter_records(self.store.path):
                key = (doc.get("provenance") or {}).get("key")
                if key in missing and key not in finished:
                    finished[key] = Rollout.from_dict(doc)
        return [finished[key] for key in wanted() if key in finished]

    def generate(self, tasks: Sequence[Task]) -> None:
        """What ``run`` does, holding no Rollout: each batch is appended to the store (required) as it is verified,
        and nothing is returned; read the store back lazily (crossgym.eval.run.StoredRollouts). Memory is a few
        batches plus the store's keys, whatever the number of rollouts."""
        if self.store is None:
            raise CrossgymError("RolloutRunner.generate needs a store: the rollouts are written there, not returned")
        self._generate(list(tasks), None)

    def _generate(self, tasks: list[Task], finished: dict[str, Rollout] | None) -> set[str]:
        """Play and score what the store lacks, appending each batch as it is verified (into ``finished`` too when
        given); returns the keys the store held before."""
        self._keyed_hashes = {}
        seen: set[str] = set()
        for t in tasks:  # (one pass: ids.count per id was quadratic in the number of tasks)
            if t.id in seen:
                raise CrossgymError(f"task ids must be unique (rollouts are keyed by them): {t.id!r} appears twice "
                                    "(fix: give each task its own id, or drop the repeated one)")
            seen.add(t.id)
        verifiers = self._preflight(tasks)
        n = self.config.n

        def wanted() -> Iterator[tuple[Task, int, str]]:
            return self._wanted(tasks)

        done_keys = self.store.keys() if self.store is not None else set()
        todo = ((t, j) for t, j, key in wanted() if key not in done_keys)
        total = len(tasks) * n
        count = sum(1 for _, _, key in wanted() if key in done_keys) if done_keys else 0
        self.resumed = count
        if count:
            log.info("resuming: %d of %d rollouts already in %s", count, total, self.store and self.store.path)
        self._report(count, total)
        if self.store is not None:
            self.store.open()
        pending: deque[list[Future[Rollout]]] = deque()
        with ThreadPoolExecutor(self.verify_workers, thread_name_prefix="crossgym-verify") as pool:
            try:
                for batch in chunked(todo, self.batch_size):
                    episodes = self._play(batch)
                    pending.append([pool.submit(self._score, ep, verifiers) for ep in episodes])
                    # write every batch already verified; wait only when too many are queued
                    while pending and (len(pending) > self.max_pending or all(f.done() for f in pending[0])):
                        count += self._write([f.result() for f in pending.popleft()], finished)
                        self._report(count, total)
            finally:  # on an error too: what was generated is kept, so a rerun resumes after it
                while pending:
                    count += self._write([f.result() for f in pending.popleft()], finished)
                    self._report(count, total)
        return done_keys

    def _wanted(self, tasks: list[Task]) -> Iterator[tuple[Task, int, str]]:
        """(task, sample index, key) for tasks x n, made as they are needed, never held (but each task's hash)."""
        hashes = self._keyed_hashes
        for t in tasks:
            h = hashes.get(id(t))
            if h is None:
                h = hashes[id(t)] = keyed_hash(self.config_hash, t)
            for j in range(self.config.n):
                yield t, j, rollout_key(t.id, j, h)

    def _report(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def _write(self, rollouts: list[Rollout], finished: dict[str, Rollout] | None) -> int:
        if self.store is not None:
            self.store.append(rollouts)
        if finished is not None:
            for r in rollouts:
                finished[r.provenance["key"]] = r
        return len(rollouts)

    # ------------------------------------------------------------------ generation
    def _play(self, batch: list[tuple[Task, int]]) -> list[Episode]:
        """Play a batch of episodes to the end, all active episodes' turns generated together."""
        episodes = []
        seed = self.config.sampling.seed
        for task, j in batch:
            env, name = self._env_for(task)
            turns = episode_settings(task, max_turns=self.config.max_turns)[2] or self.config.max_turns
            ep = Episode(task=task, index=j, env=env, env_name=name, max_turns=turns)
            ep.start(episode_seed(seed, task.id))
            episodes.append(ep)
        try:
            while True:
                active = [ep for ep in episodes if not ep.done]
                if not active:
                    return episodes
                self._turn(active)
        finally:
            for ep in episodes:
                ep.close()

    def _turn(self, active: list[Episode]) -> None:
        """Generate one turn for every active episode in one engine call: identical prompts (a task's n first
        turns) become one prompt with n samples when every group has the same size, else one sample each."""
        groups: dict[str, list[Episode]] = defaultdict(list)
        for ep in active:
            groups[ep.prompt_key()].append(ep)
        sizes = {len(members) for members in groups.values()}
        group_list = list(groups.values()) if len(sizes) == 1 else [[ep] for ep in active]
        size = len(group_list[0])
        prompts = [g[0].conversation() for g in group_list]
        tools = [list(g[0].tools) for g in group_list]
        t = time.perf_counter()
        out = self.engine.generate(prompts, size, self.config.sampling, tools if any(tools) else None)
        per_episode = (time.perf_counter() - t) / len(active)
        if len(out) != len(group_list) or any(len(row) != size for row in out):
            raise CrossgymError(f"engine {self.config.engine!r} returned the wrong number of completions")
        for members, row in zip(group_list, out, strict=True):
            for ep, completion in zip(members, row, strict=True):
                action = next((m for m in reversed(completion.messages) if m.role == "assistant"),
                              Message(role="assistant", content=completion.text))
                ep.take(action, token_ids=completion.token_ids, logprobs=completion.logprobs, seconds=per_episode)

    # ------------------------------------------------------------------ verification
    def _score(self, ep: Episode, verifiers: dict[str, Any]) -> Rollout:
        task = ep.task
        verifier = verifiers[task.verifier.key()]
        completion = ep.completion()
        t = time.perf_counter()
        verdict = ep.verdict(verifier)  # the environment's exception Verdict when it failed
        timings = {**ep.timings, "verify_s": time.perf_counter() - t}
        extra: dict[str, Any] = {}
        for key in ("truncated", "error"):
            if key in ep.info:
                extra[f"env_{key}"] = ep.info[key]
        prov = provenance(task, ep.index, self.config, self.config_hash, verifier, ep.env_name,
                          task_hash=self._keyed_hashes.get(id(task)), **extra)  # (made once per task by _wanted)
        return Rollout(task=task, completion=completion, verdict=verdict, turns=ep.turns, timings=timings,
                       provenance=prov)


def run_rollouts(engine: InferenceEngine, tasks: Sequence[Task], config: RolloutConfig, *,
                 store: RolloutStore | str | None = None, batch_size: int = 32, verify_workers: int = 4,
                 progress: Progress | None = None) -> list[Rollout]:
    """Rollouts of ``tasks`` x ``config.n`` (see RolloutRunner); ``store`` may be a path to a JSONL file."""
    if isinstance(store, str) or (store is not None and not isinstance(store, RolloutStore)):
        store = RolloutStore(store)
    runner = RolloutRunner(engine, config, store=store, batch_size=batch_size, verify_workers=verify_workers,
                           progress=progress)
    try:
        return runner.run(tasks)
    finally:
        if store is not None:
            store.close()
