"""The suite classes on crossgym's own plugins, as a plugin author would use them. The default tier checks a few
fast verifiers, two environments and TRL's plans; `-m slow` checks every registered verifier (`crossgym compat`
does that too, with every backend)."""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.compat_tests import EnvironmentConformance, PlanValidity, VerifierConformance

FAST = ["exact_match", "json_answer", "multiple_choice", "tool_call"]


class TestFastBuiltinVerifiers(VerifierConformance):
    verifiers = FAST


@pytest.mark.slow
class TestEveryBuiltinVerifier(VerifierConformance):
    garbage_tasks = 3


class TestBuiltinEnvironments(EnvironmentConformance):
    """The env_case fixture a plugin author writes, here for two built-in environments."""

    @pytest.fixture(params=["single_turn", "tool_use"])
    def env_case(self, request: pytest.FixtureRequest) -> Any:
        from crossgym.environments.cases import builtin_cases

        return builtin_cases([request.param])[0]


class TestTRLPlans(PlanValidity):
    """TRL's GRPOConfig parses every plan the TRL backend makes; undeclared variants are refused."""

    backends = ["trl"]

    @pytest.fixture(autouse=True)
    def _tiny(self, tiny_model_dir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.importorskip("trl")
        monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
