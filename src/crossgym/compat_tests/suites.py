"""The suite classes plugin authors subclass (in the manner of fsspec's abstract tests and sqlalchemy's dialect
suite): mix one into a ``Test*`` class, say what it tests, declare capabilities, run pytest with
``-p crossgym.compat_tests``.

    class TestMyVerifier(VerifierConformance, RewardParity):
        verifiers = ["my_verifier"]          # default: every registered verifier (or --crossgym-verifier)
        takes_timeout = True                 # capability flags turn checks on or off

    class TestMyBackend(RewardParity, PlanValidity, TokenConsistency):
        backends = ["my_backend"]            # default: every registered backend (or --crossgym-backend)

    class TestMyEnv(EnvironmentConformance):
        @pytest.fixture
        def env_case(self):                  # an EnvCase: factory, task, a correct and a wrong trajectory
            return EnvCase("my_env", environment_factory("my_env"), task, correct=[...], wrong=[...])

A check that fails shows the first failing sample; a backend that is not installed is skipped with its install
command.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from crossgym.compat_tests.corpus import Sample
from crossgym.compat_tests.drivers import BackendInfo
from crossgym.compat_tests.results import CheckResult
from crossgym.compat_tests.verifier_checks import GRACE_S, TIMEOUT_S


def assert_check(res: CheckResult) -> None:
    """Skip on "skip", fail (with the first failing case as JSON) on "fail" or "error"."""
    if res.status == "skip":
        pytest.skip(res.detail)
    if res.status in ("fail", "error"):
        failure = json.dumps(res.failure, ensure_ascii=True, indent=1, default=str)[:3000] if res.failure else ""
        pytest.fail(f"{res.name}: {res.detail}\n{failure}".rstrip(), pytrace=False)


def require_verifier(name: str) -> None:
    """Skip when the verifier cannot run here (missing requirement, or its examples' specs do not build)."""
    from crossgym.compat_tests.verifier_checks import unavailable_reason

    why = unavailable_reason(name)
    if why:
        pytest.skip(f"verifier {name} {why}")


def _garbage_tasks(request: pytest.FixtureRequest, cls_value: int) -> int:
    from crossgym.compat_tests.pytest_plugin import option

    return int(option(request.config, "--crossgym-garbage-tasks") or cls_value)


class Suite:
    """Base of the suite classes (the plugin parametrizes only their tests)."""

    #: verifiers to check; None: --crossgym-verifier, else every registered verifier
    verifiers: ClassVar[Sequence[str] | None] = None
    #: backends to check; None: --crossgym-backend, else every registered backend
    backends: ClassVar[Sequence[str] | None] = None
    #: garbage completions are scored on this many example tasks per verifier
    garbage_tasks: ClassVar[int] = 1


class VerifierConformance(Suite):
    """Examples behave as declared; determinism; no exception on the garbage corpus; the timeout is honoured;
    the frozen corpus scores as frozen unless the version changed; rebuilt from its spec in a fresh process, the
    verifier gives the same verdicts."""

    #: the same task and completion always give the same Verdict
    deterministic: ClassVar[bool] = True
    #: takes ``timeout=`` and returns within it (plus ``grace_s``) on any input
    takes_timeout: ClassVar[bool] = True
    timeout_s: ClassVar[float] = TIMEOUT_S
    grace_s: ClassVar[float] = GRACE_S
    #: importable by its registered name in a new interpreter (entry point, or an importable plugin module)
    fresh_process: ClassVar[bool] = True

    def test_examples(self, verifier_name: str) -> None:
        from crossgym.compat_tests.verifier_checks import check_examples

        require_verifier(verifier_name)
        assert_check(check_examples(verifier_name))

    def test_determinism(self, verifier_name: str, compat_corpus_dir: Path | None) -> None:
        from crossgym.compat_tests.verifier_checks import check_determinism

        if not self.deterministic:
            pytest.skip("declared non-deterministic (deterministic = False)")
        require_verifier(verifier_name)
        assert_check(check_determinism(verifier_name, compat_corpus_dir))

    def _garbage(self, name: str, corpus: Path | None, cache: dict[Any, Any],
                 request: pytest.FixtureRequest) -> tuple[CheckResult, CheckResult]:
        from crossgym.compat_tests.verifier_checks import check_garbage_and_timeout

        tasks = _garbage_tasks(request, self.garbage_tasks)
        key = ("garbage", name, str(corpus), tasks, self.timeout_s, self.grace_s)
        if key not in cache:
            cache[key] = check_garbage_and_timeout(name, corpus, timeout=self.timeout_s, grace=self.grace_s,
                                                   tasks=tasks)
        return cache[key]  # type: ignore[no-any-return]

    def test_garbage(self, verifier_name: str, compat_corpus_dir: Path | None, compat_cache: dict[Any, Any],
                     request: pytest.FixtureRequest) -> None:
        require_verifier(verifier_name)
        assert_check(self._garbage(verifier_name, compat_corpus_dir, compat_cache, request)[0])

    def test_timeout(self, verifier_name: str, compat_corpus_dir: Path | None, compat_cache: dict[Any, Any],
                     request: pytest.FixtureRequest) -> None:
        if not self.takes_timeout:
            pytest.skip("declared without a timeout param (takes_timeout = False)")
        require_verifier(verifier_name)
        assert_check(self._garbage(verifier_name, compat_corpus_dir, compat_cache, request)[1])

    def test_frozen(self, verifier_name: str, compat_corpus_dir: Path | None) -> None:
        from crossgym.compat_tests.verifier_checks import check_frozen

        require_verifier(verifier_name)
        assert_check(check_frozen(verifier_name, compat_corpus_dir))

    def test_fresh_process(self, verifier_name: str, compat_corpus_dir: Path | None) -> None:
        from crossgym.compat_tests.verifier_checks import check_fresh_process

        if not self.fresh_process:
            pytest.skip("declared not rebuildable in a fresh process (fresh_process = False)")
        require_verifier(verifier_name)
        assert_check(check_fresh_process(verifier_name, compat_corpus_dir))


class RewardParity(Suite):
    """For each verifier, the reward through the backend's native path equals Verdict.reward exactly, on its
    examples, its frozen corpus, garbage and (``include_episodes``) the built-in environments' scripted episodes.

    One driver call per backend and mode answers every verifier of the class (a mixed-task batch)."""

    #: parity modes to check; None: single_turn and multi_turn (each skipped where the driver lacks it)
    modes: ClassVar[Sequence[str] | None] = None
    #: add the built-in environments' scripted episodes (real multi-turn completions) to the samples
    include_episodes: ClassVar[bool] = True

    def parity_samples(self, verifier_name: str, corpus: Path | None, garbage_tasks: int,
                       episodes: list[Sample]) -> list[Sample]:
        """Override to add your own samples (keep ``super()``'s)."""
        from crossgym.compat_tests.corpus import samples_for
        from crossgym.compat_tests.verifier_checks import get_examples

        return samples_for(verifier_name, get_examples(verifier_name), corpus, garbage_tasks=garbage_tasks,
                           extra=episodes)

    def _episodes(self, cache: dict[Any, Any], names: Sequence[str]) -> dict[str, list[Sample]]:
        if not self.include_episodes:
            return {}
        key = ("episodes", tuple(names))
        if key not in cache:
            from crossgym.compat_tests.env_checks import builtin_env_cases, episode_samples

            by: dict[str, list[Sample]] = {}
            cases = [c for c in builtin_env_cases() if c.task.verifier.name in names]
            for s in episode_samples(cases):
                by.setdefault(s.task.verifier.name, []).append(s)
            cache[key] = by
        return cache[key]  # type: ignore[no-any-return]

    def test_reward_parity(self, verifier_name: str, backend_name: str, parity_mode: str,
                           compat_backend: BackendInfo, compat_corpus_dir: Path | None,
                           compat_cache: dict[Any, Any], request: pytest.FixtureRequest) -> None:
        from crossgym.compat_tests.parity import parity_ready, run_parity_batch, samples_for_mode
        from crossgym.compat_tests.pytest_plugin import verifier_names

        driver = compat_backend.driver
        assert driver is not None
        if parity_mode not in driver.modes:
            pytest.skip(f"{backend_name}'s parity driver has no {parity_mode} mode (MODES = {driver.modes})")
        if parity_mode == "multi_turn" and not compat_backend.capabilities.get("multi_turn", True):
            pytest.skip(f"{backend_name} declares no multi-turn support")
        require_verifier(verifier_name)
        names = [verifier_name] if hasattr(type(self), "verifier_name") else verifier_names(request.config, type(self))
        tasks = _garbage_tasks(request, self.garbage_tasks)
        key = ("parity", backend_name, parity_mode, tuple(names), str(compat_corpus_dir), tasks, type(self).__name__)
        if key not in compat_cache:
            episodes = self._episodes(compat_cache, names)
            groups, refs, left_out = {}, {}, {}
            for n in names:
                try:
                    require_verifier(n)
                except pytest.skip.Exception:
                    continue
                kept, r, left_out[n] = parity_ready(self.parity_samples(n, compat_corpus_dir, tasks,
                                                                        episodes.get(n, [])))
                groups[n] = samples_for_mode(kept, parity_mode, declared=driver.declared_modes)
                refs.update(r)
            compat_cache[key] = run_parity_batch(backend_name, driver, groups, parity_mode, refs)
            for n, r in compat_cache[key].items():
                r.timeouts = left_out[n]
        res = compat_cache[key][verifier_name]
        if res.status == "skip":
            pytest.skip(res.detail)
        if res.status != "pass":
            pytest.fail(f"{verifier_name} x {backend_name} ({parity_mode}): {res.detail}\n"
                        + json.dumps(res.first_mismatch, ensure_ascii=True, indent=1, default=str)[:3000],
                        pytrace=False)


class EnvironmentConformance(Suite):
    """crossgym.environments.conformance's checks on an ``env_case`` fixture (an EnvCase), one test per check;
    ``builtin_cases = True`` runs them on every built-in environment instead."""

    builtin_cases: ClassVar[bool] = False
    #: checks to leave out, e.g. ("concurrency",) for an environment that is single-session by design
    skip_checks: ClassVar[Sequence[str]] = ()

    def test_environment(self, env_case: Any, env_check: str) -> None:
        from crossgym.compat_tests.env_checks import check_environment

        assert_check(check_environment(env_case, [env_check])[env_check])


class PlanValidity(Suite):
    """``backend.plan(run)`` works for representative configs (default, each variant, LoRA, multi-turn, an extra
    verifier), the Plan is JSON, and the framework's own parser accepts it (the driver's ``validate_plan``);
    configs the backend declares it cannot run must be refused with a ConfigError."""

    #: representative config names to check; None: all of them
    configs: ClassVar[Sequence[str] | None] = None

    def test_plan(self, backend_name: str, plan_config: str, compat_backend: BackendInfo,
                  compat_cache: dict[Any, Any]) -> None:
        from crossgym.compat_tests.plans import check_plans

        key = ("plans", backend_name)
        if key not in compat_cache:
            compat_cache[key] = check_plans(compat_backend)
        assert_check(compat_cache[key][plan_config])


class TokenConsistency(Suite):
    """Multi-turn: the token ids the backend trains on decode back to the messages the environment saw
    (needs the driver's ``episode_tokens``)."""

    episodes: ClassVar[int] = 3
    max_turns: ClassVar[int] = 3

    def test_token_consistency(self, backend_name: str, compat_backend: BackendInfo) -> None:
        from crossgym.compat_tests.tokens import check_token_consistency

        if not compat_backend.capabilities.get("multi_turn"):
            pytest.skip(f"{backend_name} declares no multi-turn support")
        assert_check(check_token_consistency(compat_backend.driver, episodes=self.episodes,
                                             max_turns=self.max_turns))
