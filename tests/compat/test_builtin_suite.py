"""The suite classes on crossgym's own verifiers, as a plugin author would use them. The default tier checks a few
fast verifiers; `-m slow` checks every registered one (`crossgym compat` does that too, with every backend)."""

from __future__ import annotations

import pytest

from crossgym.compat_tests import VerifierConformance

FAST = ["exact_match", "json_answer", "multiple_choice", "tool_call"]


class TestFastBuiltinVerifiers(VerifierConformance):
    verifiers = FAST


@pytest.mark.slow
class TestEveryBuiltinVerifier(VerifierConformance):
    garbage_tasks = 3
