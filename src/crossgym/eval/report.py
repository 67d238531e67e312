"""report.html with PNG plots (reward histogram, pass@k curve, per-source bars) from an eval's metrics."""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout

log = logging.getLogger(__name__)

PLOTS = {"reward_hist": "reward_histogram.png", "pass_at_k": "pass_at_k.png", "by_source": "by_source.png"}
SAMPLES = 6


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


def plot_by_source(metrics: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    names = list(metrics["by_source"])
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(names) + 2), 3.2), dpi=100)
    xs = range(len(names))
    p1 = [metrics["by_source"][s]["pass@1"] or 0.0 for s in names]
    mr = [metrics["by_source"][s]["mean_reward"] or 0.0 for s in names]
    ax.bar([x - 0.2 for x in xs], p1, width=0.4, label="pass@1", color="#4c72b0")
    ax.bar([x + 0.2 for x in xs], mr, width=0.4, label="mean reward", color="#dd8452")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    values = p1 + mr
    ax.set_ylim(min(0.0, *values) * 1.05, max(1.0, *values) * 1.05)
    ax.axhline(0, color="#888", linewidth=0.6)
    ax.set_title("By task source")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fmt(v: Any) -> str:
    if v is None:
        return "&ndash;"
    if isinstance(v, float):
        return f"{v:.3f}"
    return html.escape(str(v))


def _group_table(title: str, groups: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{g['n_tasks']}</td><td>{g['n_rollouts']}</td>"
        f"<td>{_fmt(g['pass@1'])}</td><td>{_fmt(g['mean_reward'])}</td><td>{g['errors']['total']}</td>"
        f"<td>{html.escape(', '.join(g.get('versions', [])))}</td></tr>" for name, g in groups.items())
    return (f"<h2>{html.escape(title)}</h2><table><tr><th>name</th><th>tasks</th><th>rollouts</th><th>pass@1</th>"
            f"<th>mean reward</th><th>errors</th><th>versions</th></tr>{rows}</table>")


def _samples(rollouts: Sequence[Rollout]) -> str:
    picked = [r for r in rollouts if r.verdict.passed][:SAMPLES // 2]
    picked += [r for r in rollouts if not r.verdict.passed][:SAMPLES - len(picked)]
    items = []
    for r in picked:
        prompt = r.task.prompt[-1].content if r.task.prompt else ""
        items.append(
            f"<details><summary>{html.escape(r.task.id)} &middot; reward {r.verdict.reward:g} &middot; "
            f"{'pass' if r.verdict.passed else html.escape(r.verdict.error or 'fail')}</summary>"
            f"<p><b>prompt</b></p><pre>{html.escape(prompt[:2000])}</pre>"
            f"<p><b>completion</b></p><pre>{html.escape(r.completion.text[:2000])}</pre>"
            f"<p><b>reason</b> {html.escape(r.verdict.reason[:400])}</p></details>")
    return "<h2>Sample rollouts</h2>" + "".join(items)


def write_report(output_dir: str | Path, metrics: dict[str, Any], rollouts: Sequence[Rollout],
                 run_info: dict[str, Any] | None = None) -> Path:
    """Write the three PNG plots and report.html to ``output_dir``; returns the HTML path."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_reward_histogram(metrics, out / PLOTS["reward_hist"])
    plot_pass_at_k(metrics, out / PLOTS["pass_at_k"])
    plot_by_source(metrics, out / PLOTS["by_source"])
    info = run_info or {}
    errs = metrics["errors"]
    summary = [("tasks", metrics["n_tasks"]), ("rollouts", metrics["n_rollouts"]), ("pass@1", metrics["pass@1"]),
               *((f"pass@{k}", v) for k, v in metrics["pass@k"].items() if k != "1"),
               ("mean reward", metrics["mean_reward"]), ("reward std", metrics["reward_std"]),
               ("errors", f"{errs['total']} (timeout {errs['timeout']}, malformed {errs['malformed']}, "
                          f"exception {errs['exception']})"),
               ("mean turns", metrics["mean_turns"]), ("mean completion tokens", metrics["mean_completion_tokens"])]
    summary_rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in summary)
    info_rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td><code>{html.escape(json.dumps(v, default=str))}"
                        f"</code></td></tr>" for k, v in info.items())
    doc = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>crossgym eval</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}img{{margin:4px}}pre{{background:#f6f6f6;
padding:6px;white-space:pre-wrap}}</style></head><body>
<h1>crossgym eval</h1>
<table>{info_rows}</table>
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
