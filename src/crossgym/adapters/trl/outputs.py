"""What a TRL run leaves in output_dir: metrics.jsonl (one line per TRL log), step times, the reward-curve PNG,
and a hook for progress bars and graceful stops (a TrainerCallback: TRL's public extension point)."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from crossgym.protocol.interfaces import ProgressFn, StopSignal
from crossgym.scoring.parts import PART_PREFIX

log = logging.getLogger(__name__)


def make_run_logger(output_dir: str | Path, *, progress: ProgressFn | None = None,
                    stop: StopSignal | None = None, segment: int = 1, resumed: bool = False) -> Any:
    """A TrainerCallback writing metrics.jsonl and step times, reporting progress, and stopping when ``stop`` is
    set (at the end of the current step, saving a checkpoint-N of it, so a stopped run can be resumed). Each row says which run
    ``segment`` wrote it; a ``resumed`` run appends to metrics.jsonl (cut back to its checkpoint) instead of
    starting it over."""
    from transformers import TrainerCallback

    class RunLogger(TrainerCallback):
        def __init__(self) -> None:
            self.path = Path(output_dir) / "metrics.jsonl"
            self.step_times: list[float] = []
            self._t0: float | None = None
            self._start = time.time()
            self.stopped_early = False

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not resumed:
                self.path.write_text("", encoding="utf-8")

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self._t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self._t0 is not None:
                self.step_times.append(time.perf_counter() - self._t0)
            if progress is not None:
                progress(state.global_step, state.max_steps, {})
            if stop is not None and stop.is_set():
                self.stopped_early = True
                control.should_training_stop = True
                control.should_save = True  # a checkpoint-N of this step: `crossgym train --resume` continues it

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kw: Any) -> None:
            if not logs:
                return
            row = {"step": state.global_step, "segment": segment, "time_s": round(time.time() - self._start, 3)}
            if self.step_times:
                row["step_time_s"] = round(self.step_times[-1], 4)
            row.update({k: _jsonable(v) for k, v in logs.items()})
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            if progress is not None:
                progress(state.global_step, state.max_steps, dict(logs))

    return RunLogger()


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a metrics.jsonl (missing file: [])."""
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def reward_series(rows: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """{"reward": [(step, value)], "rewards/<name>/mean": [...]} from metrics rows (NaN/None skipped); for a blend,
    the total and ``crossgym/part/<part>/reward`` per part instead of the per-function lines."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        for k, v in r.items():
            if (k == "reward" or (k.startswith("rewards/") and k.endswith("/mean")) or _is_part_reward(k)) \
                    and isinstance(v, (int, float)) and v == v:
                out.setdefault(k, []).append((int(r["step"]), float(v)))
    if any(_is_part_reward(k) for k in out):  # a blend: one line per part (its reward), beside the total
        out = {k: v for k, v in out.items() if k == "reward" or _is_part_reward(k)}
    return out


def _is_part_reward(key: str) -> bool:
    return key.startswith(PART_PREFIX) and key.endswith("/reward")


def _label(key: str) -> str:
    if key == "reward":
        return "reward (weighted sum)"
    if _is_part_reward(key):
        return "part " + key[len(PART_PREFIX):-len("/reward")]
    return key.split("/")[1]


def plot_reward_curve(metrics_path: str | Path, png_path: str | Path, *, title: str = "GRPO reward") -> Path | None:
    """Write a reward-vs-step PNG (raw points and a moving average; the held-out pass rate of ``grpo.eval_steps``
    on a second 0-1 axis); None when there is nothing to plot."""
    rows = read_metrics(metrics_path)
    series = reward_series(rows)
    if not series:
        return None
    from crossgym.adapters.trl.watch import held_out_series

    held_out = held_out_series(rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for name, pts in sorted(series.items(), key=lambda kv: kv[0] != "reward"):
        steps = [s for s, _ in pts]
        vals = [v for _, v in pts]
        total = name == "reward"
        label = _label(name)
        style: dict[str, Any] = {"color": "black", "linestyle": "--"} if total else {}
        dashed: dict[str, Any] = {"linestyle": "--"} if total else {}
        line = ax.plot(steps, vals, alpha=0.25, linewidth=1, **style)[0]
        k = max(1, len(vals) // 10)
        smooth = [sum(vals[max(0, i - k + 1):i + 1]) / len(vals[max(0, i - k + 1):i + 1]) for i in range(len(vals))]
        ax.plot(steps, smooth, color=line.get_color(), linewidth=2, label=f"{label} (mean of {k})", **dashed)
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if held_out:  # grpo.eval_steps: the held-out pass rate on its own 0-1 axis, so the two curves can part
        ax2 = ax.twinx()
        hl = ax2.plot([s for s, _ in held_out], [v for _, v in held_out], "o-", color="#c44e52", linewidth=2,
                      label="held-out pass rate (greedy)")
        ax2.set_ylim(-0.02, 1.02)
        ax2.set_ylabel("held-out pass rate")
        handles, labels = [*handles, *hl], [*labels, *(str(h.get_label()) for h in hl)]
    ax.legend(handles, labels, fontsize=8)
    fig.tight_layout()
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def summarize(rows: list[dict[str, Any]], step_times: list[float]) -> dict[str, Any]:
    """Headline numbers for TrainResult.metrics: the mean reward of the first and of the last logged steps, step
    times. ``reward_start``/``reward_end`` average windows that never overlap (up to 10 logged steps each, fewer in
    a short run; ``reward_start_steps`` and ``reward_end_steps`` name their first and last step); one logged step
    gives ``reward_only``. ``reward_first10``/``reward_last10`` (min(10, logged) steps each) stay for old readers."""
    series = reward_series(rows).get("reward", [])
    rewards = [v for _, v in series]
    k = min(10, len(rewards))
    out: dict[str, Any] = {"logged_steps": len(rewards)}
    if k:
        out["reward_first10"] = sum(rewards[:k]) / k
        out["reward_last10"] = sum(rewards[-k:]) / k
    window = min(10, len(rewards) // 2)
    if window:
        out["reward_start"] = sum(rewards[:window]) / window
        out["reward_end"] = sum(rewards[-window:]) / window
        out["reward_start_steps"] = [series[0][0], series[window - 1][0]]
        out["reward_end_steps"] = [series[-window][0], series[-1][0]]
    elif rewards:
        out["reward_only"] = [series[0][0], rewards[0]]
    if step_times:
        ordered = sorted(step_times)
        out["mean_step_s"] = sum(step_times) / len(step_times)
        out["median_step_s"] = ordered[len(ordered) // 2]
    return out
