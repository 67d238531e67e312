"""veRL's custom reward function: rebuild the task and its verifier from a row's extra_info and score the completion.

veRL calls ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)`` once per
sample (solution_str is the decoded response, special tokens skipped). The generated reward module of a run
(``reward_module_source``) binds the run's RewardRule (crossgym.scoring: on_error, task_weight, extra terms) and
calls ``score``. veRL cannot mask a missing reward, so on_error must be a number here. The returned dict is
``Scored.info()``: the same keys for every sample (veRL stacks them into arrays per key), named as on every backend.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.rollout.driver import episode_from_json
from crossgym.scoring import OnError, RewardRule, Scored

log = logging.getLogger(__name__)

#: extra_info keys written by crossgym.adapters.verl.dataset (and by the agent loop, for whole episodes).
TASK_KEY = "crossgym_task"
COMPLETION_KEY = "crossgym_completion"


def completion_for(solution_str: str, extra_info: Mapping[str, Any] | None) -> tuple[Completion, str | None]:
    """(the whole episode when the agent loop left it in extra_info, else the decoded response as one reply;
    the environment error detail when the episode ended on one)."""
    raw = (extra_info or {}).get(COMPLETION_KEY)
    if raw:
        try:
            return episode_from_json(raw)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable %s in extra_info (%s): scoring the decoded response instead", COMPLETION_KEY, exc)
    return Completion.from_text(solution_str or ""), None


def task_for(extra_info: Mapping[str, Any] | None) -> Task:
    """The crossgym Task a row carries (its JSON under extra_info["crossgym_task"])."""
    from crossgym.rollout.tasks import task_from_json

    raw = (extra_info or {}).get(TASK_KEY)
    if not raw:
        raise CrossgymError(f"the row's extra_info has no {TASK_KEY!r}: it was not written by crossgym "
                            "(build parquet files with `crossgym plan`/`train --backend verl`)")
    return task_from_json(raw) if isinstance(raw, str) else Task.from_dict(raw)


def score_row(rule: RewardRule, solution_str: str, extra_info: Mapping[str, Any] | None) -> Scored:
    """The rule's Scored for one veRL sample (a row that cannot be rebuilt scores on_error, every term)."""
    completion, failed = completion_for(solution_str, extra_info)
    try:
        task = task_for(extra_info)
    except (CrossgymError, ValueError, KeyError, TypeError) as exc:
        return rule.score_error(f"cannot rebuild the task: {exc}")
    if failed is not None:  # the environment failed: the episode driver's exception Verdict, every term on_error
        return rule.score_error(failed, task=task)
    return rule.score(task, completion)


def score(solution_str: str, extra_info: Mapping[str, Any] | None, *, rule: Mapping[str, Any] | RewardRule | None
          = None, **settings: Any) -> dict[str, Any]:
    """veRL's reward dict for one sample under ``rule`` (a RewardRule or its dict; settings of the 0.1 generated
    module, on_error/task_weight/extra, are read too)."""
    if isinstance(rule, RewardRule):
        keys: tuple[str, ...] = tuple(rule.metric_keys())
    else:
        rule, keys = _rule_of(json.dumps({**settings, **dict(rule or {})}, sort_keys=True, default=_plain))
    return score_row(rule.numeric("veRL"), solution_str, extra_info).info(keys)


@functools.lru_cache(maxsize=64)
def _rule_of(text: str) -> tuple[RewardRule, tuple[str, ...]]:
    """The rule of a reward_kwargs dict and its metric keys, built once per distinct rule (veRL calls
    compute_score once per sample)."""
    rule = RewardRule.from_dict(json.loads(text))
    return rule, tuple(rule.metric_keys())


def _plain(value: Any) -> Any:
    """OmegaConf containers (veRL's reward_kwargs) as plain JSON values."""
    return dict(value) if hasattr(value, "keys") else list(value)


def compute_score(data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Mapping[str, Any] | None = None, **settings: Any) -> dict[str, Any]:
    """veRL's custom_reward_function signature; the rule may come as reward_kwargs. Unknown kwargs are ignored."""
    known = {k: v for k, v in settings.items() if k in ("rule", "on_error", "task_weight", "extra", "extras")}
    return score(solution_str, extra_info, **known)


class SpecReward:
    """veRL's native reward object for one verifier: a compute_score applying ``spec`` to every row."""

    def __init__(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> None:
        self.spec = spec
        self.rule = RewardRule(on_error=on_error, override=spec).numeric("veRL")
        self.keys = tuple(self.rule.metric_keys())
        self.__name__ = "compute_score"

    def __repr__(self) -> str:
        return f"SpecReward({self.spec.key()})"

    def __call__(self, data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                 extra_info: Mapping[str, Any] | None = None, **_: Any) -> dict[str, Any]:
        return score_row(self.rule, solution_str, extra_info).info(self.keys)


def reward_settings(run: Any) -> dict[str, Any]:
    """What the generated module binds: the run's RewardRule as a dict (on_error "none" is a ConfigError here)."""
    return {"rule": RewardRule.from_run(run).numeric("veRL").to_dict()}


_MODULE = '''"""veRL custom reward function generated by crossgym for {what}.

veRL loads it through reward.custom_reward_function.path=<this file> and .name=compute_score; every sample's task
and verifier are rebuilt from its extra_info by crossgym (which must be importable where veRL runs).
"""

from crossgym.adapters.verl.reward import score

SETTINGS = {settings}


def compute_score(data_source=None, solution_str="", ground_truth=None, extra_info=None, **kwargs):
    """crossgym's reward for one sample: a dict with "score" and the same extra keys for every sample."""
    return score(solution_str, extra_info, **{{**SETTINGS, **{{k: v for k, v in kwargs.items() if k in SETTINGS}}}})
'''


def reward_module_source(settings: Mapping[str, Any], *, what: str = "a crossgym run") -> str:
    """The text of the generated reward module for ``settings`` (see ``reward_settings``)."""
    import pprint

    return _MODULE.format(what=what, settings=pprint.pformat(dict(settings), sort_dicts=True, width=100))
