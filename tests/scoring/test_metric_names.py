"""One metric-naming scheme: TRL's log_metric keys, veRL's reward-dict keys and OpenRLHF's extra_logs are the same
for the same rule (0.1 named extra terms `{name}_extra`, `extra/{name}` and `crossgym_{name}` per backend)."""

from __future__ import annotations

from crossgym.protocol import Task, VerifierSpec
from crossgym.scoring import ExtraTerm, RewardRule
from crossgym.scoring.metrics import METRIC_KEYS, extra_key

RULE = RewardRule(on_error=-1.0, task_weight=2.0,
                  extras=(ExtraTerm("brief", VerifierSpec("length", {"max": 3, "unit": "chars"}), 0.5),))
TASKS = [Task(id=f"t{i}", prompt="2+2?", answer="4", verifier=VerifierSpec("exact_match")) for i in range(3)]
TEXTS = ["4", "five", ""]


def _trl_keys() -> set[str]:
    from crossgym.adapters.trl.rewards import reward_functions

    logged: list[str] = []
    funcs, _ = reward_functions(RULE, TASKS)
    for f in funcs:
        f(completions=[[{"role": "assistant", "content": t}] for t in TEXTS], task=[t.to_json() for t in TASKS],
          log_metric=lambda k, v: logged.append(k))
    return set(logged)


def _verl_keys() -> set[str]:
    from crossgym.adapters.verl.reward import TASK_KEY, score

    keys: set[str] = set()
    for t, text in zip(TASKS, TEXTS, strict=True):
        keys |= set(score(text, {TASK_KEY: t.to_json()}, rule=RULE)) - {"score", "acc", "error", "components"}
    return keys


def _openrlhf_keys() -> set[str]:
    from crossgym.adapters.openrlhf.scoring import QueryScorer, ScoreConfig

    scorer = QueryScorer(ScoreConfig(rule=RULE, strip_tokens=()))
    reply = scorer.reply(["P" + t for t in TEXTS], ["P"] * 3, [t.to_json() for t in TASKS])
    return set(reply["extra_logs"])


def test_every_backend_logs_the_same_metric_keys():
    want = set(METRIC_KEYS) | {extra_key("brief")}
    assert _trl_keys() == _verl_keys() == _openrlhf_keys() == want
