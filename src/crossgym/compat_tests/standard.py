"""The standard suite, as crossgym runs it on itself: every check on every registered verifier, backend and
built-in environment. Run it against your own installed plugin with

    pytest -p crossgym.compat_tests --pyargs crossgym.compat_tests.standard --crossgym-backend mybackend

(or ``--crossgym-verifier myverifier``); subclass the suites in your own test file for anything finer.
"""

from __future__ import annotations

from crossgym.compat_tests.suites import (
    EnvironmentConformance,
    PlanValidity,
    RewardParity,
    TokenConsistency,
    VerifierConformance,
)


class TestVerifierConformance(VerifierConformance):
    """Each verifier's examples, determinism, garbage, timeout and fresh-process checks."""


class TestRewardParity(RewardParity):
    """Each verifier x backend x mode: native reward == Verdict.reward."""


class TestEnvironmentConformance(EnvironmentConformance):
    """Every built-in environment through crossgym.environments.conformance."""

    builtin_cases = True


class TestPlanValidity(PlanValidity):
    """Each backend's plans parse in its framework."""


class TestTokenConsistency(TokenConsistency):
    """Each multi-turn backend trains on the tokens its environment saw."""
