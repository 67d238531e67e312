"""report.html from an eval's metrics, in the order a person reads it: what to do next (one line per common pattern:
crossgym.eval.advice), the failure modes (infra vs model), the health checks, one chart per task source on its own
reward scale, then the summary with 95% intervals, the overall plots (reward histogram, pass@k curve, per-source
bars), per-source and per-verifier tables, and sample rollouts (passes, failures and errors from each source)."""

from __future__ import annotations

import html
import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout

log = logging.getLogger(__name__)

PLOTS = {"reward_hist": "reward_histogram.png", "pass_at_k": "pass_at_k.png", "by_source": "by_source.png",
         "source_panels": "by_source_rewards.png"}
SAMPLES = 6
#: sources drawn as panels (the rest are named under the chart)
MAX_PANELS = 12
#: rewards drawn as one bar each when a source has at most this many distinct values
PANEL_DISTINCT = 12
COLORS = {"passed": "#55a868", "model": "#dd8452", "infra": "#8c8c8c"}
OUTCOMES = {"passed": "passed", "model": "failed (the model's)", "infra": "verifier/infra error (masked in training)"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_reward_histogram(metrics: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    hist = metrics["reward_distribution"]["histogram"]
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=100)
    edges, counts = hist["edges"], hist["counts"]
    if counts:
        if len(counts) == 1:
            ax.bar([edges[0]], counts, width=0.1, color="#4c72b0")
        else:
            widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=False)]
            ax.bar(edges[:-1], counts, width=widths, align="edge", color="#4c72b0", edgecolor="white")
    ax.set_xlabel("reward")
    ax.set_ylabel("rollouts")
    ax.set_title("Reward distribution")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_pass_at_k(metrics: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=100)
    for label, doc, style in [("all", metrics, "o-")] + [(s, d, ".--") for s, d in metrics["by_source"].items()]:
        ks = sorted(int(k) for k in doc["pass@k"])
        if ks:
            ax.plot(ks, [doc["pass@k"][str(k)] for k in ks], style, label=label)
    ax.set_xscale("log", base=2)
    all_ks = sorted(int(k) for k in metrics["pass@k"])
    if all_ks:
        ax.set_xticks(all_ks)
        ax.set_xticklabels([str(k) for k in all_ks])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("pass@k")
    ax.set_title("pass@k (unbiased)")
    if metrics["by_source"]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _errbars(values: list[float], docs: list[dict[str, Any] | None]) -> list[list[float]]:
    """matplotlib's yerr (distances below and above) from interval documents (0 where there is none)."""
    low = [max(0.0, v - d["low"]) if d else 0.0 for v, d in zip(values, docs, strict=True)]
    high = [max(0.0, d["high"] - v) if d else 0.0 for v, d in zip(values, docs, strict=True)]
    return [low, high]


def plot_by_source(metrics: dict[str, Any], path: Path) -> None:
    """pass@1 (0-1, Wilson intervals) and mean reward (its own scale, bootstrap intervals) per source, side by side."""
    plt = _pyplot()
    groups = metrics["by_source"]
    names = list(groups)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(6, 1.2 * len(names) + 3), 3.2), dpi=100)
    xs = list(range(len(names)))
    p1 = [groups[s]["pass@1"] or 0.0 for s in names]
    mr = [groups[s]["mean_reward"] or 0.0 for s in names]
    ci = [groups[s].get("intervals") or {} for s in names]
    ax1.bar(xs, p1, color="#4c72b0", yerr=_errbars(p1, [c.get("pass@1") for c in ci]), capsize=3)
    ax1.set_ylim(0.0, 1.02)
    ax1.set_title("pass@1 (95% Wilson)", fontsize=9)
    ax2.bar(xs, mr, color="#dd8452", yerr=_errbars(mr, [c.get("mean_reward") for c in ci]), capsize=3)
    ax2.axhline(0, color="#888", linewidth=0.6)
    ax2.set_title("mean reward (95% bootstrap)", fontsize=9)
    for ax in (ax1, ax2):
        ax.set_xticks(xs)
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    fig.suptitle("By task source", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _panel_groups(rollouts: Sequence[Rollout]) -> dict[str, dict[str, list[float]]]:
    """Per task source, the finite rewards of its rollouts by outcome: passed, model (failed), infra (masked)."""
    from crossgym.eval.metrics import task_source
    from crossgym.scoring.failure import fault

    out: dict[str, dict[str, list[float]]] = {}
    for r in rollouts:
        if math.isnan(r.verdict.reward):
            continue
        kind = fault(r.verdict)
        out.setdefault(task_source(r), {"passed": [], "model": [], "infra": []})[
            "passed" if kind == "none" else kind].append(r.verdict.reward)
    return dict(sorted(out.items()))


def _panel_bins(values: list[float]) -> tuple[list[float], float, Callable[[float], int]]:
    """(bar positions, bar width, reward -> bar index) for one source's sorted distinct rewards: one bar per value
    when there are few, else 10 bins over its own range."""
    if len(values) <= PANEL_DISTINCT:
        step = min((b - a for a, b in zip(values, values[1:], strict=False)), default=1.0) or 1.0
        index = {v: i for i, v in enumerate(values)}
        return values, 0.8 * step, index.__getitem__
    lo, bins = values[0], 10
    span = (values[-1] - lo) / bins
    return [lo + (i + 0.5) * span for i in range(bins)], 0.9 * span, lambda v: min(bins - 1, int((v - lo) / span))


def _panel_counter(slot: Callable[[float], int], n: int) -> Callable[[list[float]], list[int]]:
    def counts(vals: list[float]) -> list[int]:
        c = [0] * n
        for v in vals:
            c[slot(v)] += 1
        return c

    return counts


def plot_source_panels(metrics: dict[str, Any], rollouts: Sequence[Rollout], path: Path) -> list[str]:
    """One panel per task source, each on its own reward scale (a 0-1 source next to a 0-2 one), bars stacked by
    outcome (passed, failed, verifier/infra error), titled with its pass@1 and 95% interval. Returns the sources
    left out (past MAX_PANELS)."""
    plt = _pyplot()
    groups = _panel_groups(rollouts)
    names = list(groups)[:MAX_PANELS]
    cols = max(1, min(3, len(names)))
    rows = max(1, math.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.6 * rows + 0.5), dpi=100, squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    if not names:
        axes[0][0].text(0.5, 0.5, "no finite rewards", ha="center", va="center")
    for ax, name in zip(axes.flat, names, strict=False):
        by = groups[name]
        values = sorted({x for xs in by.values() for x in xs})
        lo, hi = values[0], values[-1]
        xs, width, slot = _panel_bins(values)
        counts = _panel_counter(slot, len(xs))
        bottom = [0] * len(xs)
        for outcome in OUTCOMES:
            c = counts(by[outcome])
            if any(c):
                ax.bar(xs, c, width=width, bottom=bottom, color=COLORS[outcome])
                bottom = [b + x for b, x in zip(bottom, c, strict=True)]
        if len(values) <= PANEL_DISTINCT:
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{v:g}" for v in xs])
        if lo == hi:
            ax.set_xlim(lo - 1.0, hi + 1.0)
        g = (metrics.get("by_source") or {}).get(name) or {}
        p1, ci = g.get("pass@1"), (g.get("intervals") or {}).get("pass@1")
        p1_text = ("n/a" if p1 is None else f"{p1:.2f}") + (f" [{ci['low']:.2f}, {ci['high']:.2f}]" if ci else "")
        ax.set_title(f"{name}\npass@1 {p1_text} · n={sum(len(v) for v in by.values())}", fontsize=9)
        ax.set_xlabel(f"reward (all {lo:g})" if lo == hi else f"reward ({lo:g} to {hi:g})", fontsize=8)
        ax.set_ylabel("rollouts", fontsize=8)
        ax.tick_params(labelsize=8)
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(color=COLORS[o], label=label) for o, label in OUTCOMES.items()], loc="upper center",
               ncol=len(OUTCOMES), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    fig.savefig(path)
    plt.close(fig)
    return list(groups)[MAX_PANELS:]


_CODE = re.compile(r"`([^`]+)`")


def _next_steps(metrics: dict[str, Any]) -> str:
    from crossgym.eval.advice import next_steps

    items = []
    for step in metrics.get("next_steps") or next_steps(metrics):  # an older metrics.json: computed here
        scope = "" if step["scope"] == "all" else f"<b>{html.escape(step['scope'])}</b>: "
        line = _CODE.sub(r"<code>\1</code>", html.escape(step["line"], quote=False))
        items.append(f"<li>{scope}{line}</li>")
    return f'<div class="next"><h2>What to do next</h2><ul>{"".join(items)}</ul></div>' if items else ""


class _Raw(str):
    """Markup already escaped."""


def _fmt(v: Any) -> str:
    if v is None:
        return "&ndash;"
    if isinstance(v, float):
        return f"{v:.3f}"
    return html.escape(str(v))


def _ci(doc: dict[str, Any] | None) -> str:
    return "" if not doc else f" <small>[{doc['low']:.2f}, {doc['high']:.2f}]</small>"


def _group_table(title: str, groups: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{g['n_tasks']}</td><td>{g['n_rollouts']}</td>"
        f"<td>{_fmt(g['pass@1'])}{_ci((g.get('intervals') or {}).get('pass@1'))}</td>"
        f"<td>{_fmt(g['mean_reward'])}{_ci((g.get('intervals') or {}).get('mean_reward'))}</td>"
        f"<td>{g['errors']['total']}</td>"
        f"<td>{html.escape(', '.join(g.get('versions', [])))}</td></tr>" for name, g in groups.items())
    return (f"<h2>{html.escape(title)}</h2><table><tr><th>name</th><th>tasks</th><th>rollouts</th>"
            f"<th>pass@1 [95% Wilson]</th><th>mean reward [95% bootstrap]</th><th>errors</th><th>versions</th></tr>"
            f"{rows}</table>")


def _mode_rows(modes: list[dict[str, Any]], label: Any) -> str:
    rows = []
    for m in modes:
        where = ", ".join(f"{html.escape(s)} {g['count']} ({g['share']:.0%})" for s, g in m["by_source"].items())
        examples = "".join(
            f"<details><summary>{html.escape(e['task'])} ({html.escape(e['source'])}) &middot; reward "
            f"{_fmt(e['reward'])}</summary><p><b>completion</b></p><pre>{html.escape(e['completion'])}</pre>"
            f"<p><b>reason</b> {html.escape(e['reason'])}</p></details>" for e in m["examples"])
        rows.append(f"<tr><td>{label(m)}</td><td>{m['count']}</td><td>{m['share']:.1%}</td><td>{where}</td>"
                    f"<td>{examples}</td></tr>")
    return "".join(rows)


_FAULT_LABEL = {"infra": "infrastructure: masked in training", "model": "the model's"}


def _failure_modes(metrics: dict[str, Any]) -> str:
    fm = metrics.get("failure_modes")
    if not fm:
        return ""
    if not fm["failed"]:
        return "<h2>Failure modes</h2><p>Every rollout passed.</p>"
    head = ("<tr><th>{}</th><th>count</th><th>share of rollouts</th><th>by source (share of its rollouts)</th>"
            "<th>examples</th></tr>")
    faults = fm.get("by_fault") or {}
    whose = (f" By fault: <b>{faults.get('model', 0)} the model's</b> (wrong or malformed answers), "
             f"<b>{faults.get('infra', 0)} the infrastructure's</b> (the verifier, its sandbox or the environment "
             "failed: these measure nothing about the model, and training masks them under on_error: none)."
             if faults else "")
    parts = [f"<h2>Failure modes</h2><p>{fm['failed']} of {fm['n_rollouts']} rollouts did not pass: "
             f"{fm['honest_failures']} honest failures, {fm['errors_total']} errors "
             f"({', '.join(f'{html.escape(k)} {v}' for k, v in fm['by_kind'].items() if k != 'fail') or 'none'})."
             f"{whose} Reasons are grouped into classes with numbers and quoted values stripped.</p>"]
    if fm["errors"]["modes"]:
        parts.append("<h3>Errors (timeout, malformed, exception)</h3><table>" + head.format("kind: reason class")
                     + _mode_rows(fm["errors"]["modes"],
                                  lambda m: f"<b>{html.escape(m['kind'])}</b>: {html.escape(m['reason'])}"
                                            + (f" <small>({_FAULT_LABEL.get(m['fault'], m['fault'])})</small>"
                                               if m.get("fault") else ""))
                     + "</table>")
    if fm["failures"]["modes"]:
        parts.append("<h3>Honest failures (by the verifier's reason)</h3><table>" + head.format("reason class")
                     + _mode_rows(fm["failures"]["modes"], lambda m: html.escape(m["reason"])) + "</table>")
    if fm["components"]["modes"]:
        parts.append("<h3>Failed components</h3><table>" + head.format("verifier.component")
                     + _mode_rows(fm["components"]["modes"],
                                  lambda m: html.escape(f"{m['verifier']}.{m['component']}")) + "</table>")
    return "".join(parts)


def _health(metrics: dict[str, Any]) -> str:
    h = metrics.get("health")
    if not h:
        return ""
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in h["warnings"])
    t, z, u = h["truncated"], h["zero_variance_groups"], h["reward_without_pass"]
    rows = [("truncated at max_tokens", f"{t['count']} of {t['known']}" if t["known"] else "unknown (no token ids)"),
            ("episodes cut at max_turns", h["env_truncated"]["count"]), ("empty completions", h["empty"]["count"]),
            ("repetitive (runaway) completions", h["repetitive"]["count"]),
            ("verifier errors (timeout, exception)", f"{h['verifier_errors']['count']} "
                                                     f"({h['verifier_errors']['rate']:.1%})"),
            ("tasks with every sample scored alike", f"{z['count']} of {z['groups']} (all pass {z['all_pass']}, "
                                                     f"all fail {z['all_fail']})"),
            ("reward earned by rollouts that did not pass", f"{u['share']:.0%}")]
    table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return (f"<h2>Health checks</h2>{f'<p><b>Warnings</b></p><ul>{warn}</ul>' if warn else '<p>No warnings.</p>'}"
            f"<table>{table}</table>")


def pick_samples(rollouts: Sequence[Rollout], k: int = SAMPLES) -> list[Rollout]:
    """Passes, honest failures and errors, each spread over the task sources."""
    from crossgym.eval.failures import _spread
    from crossgym.eval.metrics import task_source

    def spread(rs: list[Rollout], n: int) -> list[Rollout]:
        return [r for _, r in _spread([(task_source(r), r) for r in rs], n)]

    passes = [r for r in rollouts if r.verdict.passed]
    fails = [r for r in rollouts if not r.verdict.passed and r.verdict.error is None]
    errors = [r for r in rollouts if r.verdict.error is not None]
    n_err = min(len(errors), max(1, k // 3)) if errors else 0
    n_pass = min(len(passes), max(1, k // 3)) if passes else 0
    picked = spread(errors, n_err) + spread(passes, n_pass)
    picked += spread(fails, k - len(picked))
    if len(picked) < k:  # too few of some kind: fill with what is left
        chosen = {id(r) for r in picked}
        picked += spread([r for r in rollouts if id(r) not in chosen], k - len(picked))
    return picked


def _samples(rollouts: Sequence[Rollout]) -> str:
    from crossgym.eval.metrics import task_source

    items = []
    for r in pick_samples(rollouts):
        prompt = r.task.prompt[-1].content if r.task.prompt else ""
        status = "pass" if r.verdict.passed else html.escape(r.verdict.error or "fail")
        items.append(
            f"<details><summary>{html.escape(r.task.id)} ({html.escape(task_source(r))}) &middot; reward "
            f"{r.verdict.reward:g} &middot; {status}</summary>"
            f"<p><b>prompt</b></p><pre>{html.escape(prompt[:2000])}</pre>"
            f"<p><b>completion</b></p><pre>{html.escape(r.completion.text[:2000])}</pre>"
            f"<p><b>reason</b> {html.escape(r.verdict.reason[:400])}</p></details>")
    return "<h2>Sample rollouts</h2><p>Passes, failures and errors from each task source.</p>" + "".join(items)


def _info_value(v: Any) -> str:
    if v is None:
        return "&ndash;"
    if isinstance(v, (dict, list)):
        return f"<code>{html.escape(json.dumps(v, default=str))}</code>"
    return html.escape(str(v))


def write_report(output_dir: str | Path, metrics: dict[str, Any], rollouts: Sequence[Rollout],
                 run_info: dict[str, Any] | None = None) -> Path:
    """Write the three PNG plots and report.html to ``output_dir``; returns the HTML path."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_reward_histogram(metrics, out / PLOTS["reward_hist"])
    plot_pass_at_k(metrics, out / PLOTS["pass_at_k"])
    plot_by_source(metrics, out / PLOTS["by_source"])
    left_out = plot_source_panels(metrics, rollouts, out / PLOTS["source_panels"])
    more = (f"<p>Not drawn (past {MAX_PANELS} sources): {html.escape(', '.join(left_out))}; see the table below.</p>"
            if left_out else "")
    info = run_info or {}
    errs = metrics["errors"]
    ci = metrics.get("intervals") or {}
    kci = ci.get("pass@k") or {}
    summary = [("tasks", metrics["n_tasks"]), ("rollouts", metrics["n_rollouts"]),
               ("pass@1", _Raw(_fmt(metrics["pass@1"]) + _ci(ci.get("pass@1")))),
               *((f"pass@{k}", _Raw(_fmt(v) + _ci(kci.get(k)))) for k, v in metrics["pass@k"].items() if k != "1"),
               ("mean reward", _Raw(_fmt(metrics["mean_reward"]) + _ci(ci.get("mean_reward")))),
               ("reward std", metrics["reward_std"]),
               ("errors", f"{errs['total']} (timeout {errs['timeout']}, malformed {errs['malformed']}, "
                          f"exception {errs['exception']})"),
               ("mean turns", metrics["mean_turns"]), ("mean completion tokens", metrics["mean_completion_tokens"]),
               ("time (s)", ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in metrics["timings"].items())),
               ("pass means", "the verifier's own passed flag (a partial reward is not a pass)")]
    summary_rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{v if isinstance(v, _Raw) else _fmt(v)}</td></tr>"
                           for k, v in summary)
    methods = ci.get("methods") or {}
    summary_rows += "".join(f"<tr><th>95% interval: {html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                            for k, v in methods.items())
    info_rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{_info_value(v)}</td></tr>" for k, v in info.items())
    doc = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>crossgym eval</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}img{{margin:4px;max-width:100%;height:auto}}pre{{background:#f6f6f6;
padding:6px;white-space:pre-wrap}}.next{{background:#fff8e1;border-left:4px solid #f0a500;padding:2px 14px;
margin:1em 0}}.next li{{margin:6px 0}}code{{background:#eee;padding:0 3px}}</style></head><body>
<h1>crossgym eval</h1>
<table>{info_rows}</table>
{_next_steps(metrics)}
{_failure_modes(metrics)}
{_health(metrics)}
<h2>By task source, each on its own scale</h2>
<p>Rewards of each source's rollouts: passed, failed (the model's) and verifier/infrastructure errors; each panel
has its own reward axis and its pass@1 with a 95% Wilson interval.</p>
<div><img src="{PLOTS['source_panels']}" alt="reward per task source, each on its own scale"></div>{more}
<h2>Summary</h2><table>{summary_rows}</table>
<div><img src="{PLOTS['reward_hist']}" alt="reward histogram"><img src="{PLOTS['pass_at_k']}" alt="pass@k curve">
<img src="{PLOTS['by_source']}" alt="per-source bars"></div>
{_group_table("By task source", metrics["by_source"])}
{_group_table("By verifier", metrics["by_verifier"])}
{_samples(rollouts)}
</body></html>
"""
    path = out / "report.html"
    path.write_text(doc, encoding="utf-8")
    return path
