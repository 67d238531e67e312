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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.text.visible import visible

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


def _plot_label(name: str) -> str:
    """A task source's name as matplotlib must be given it to draw it as it reads: matplotlib parses text between
    two ``$`` as math, and a name such as ``$\\frac{$`` (from a dataset's metadata) raised ValueError at savefig,
    after the whole eval had run, so no report and no summary; ``\\$`` is drawn as ``$``. A control character is
    drawn as its escape (a font has no glyph for ESC, and matplotlib's warning about it printed the raw character),
    and a leading ``_`` gains a space (matplotlib leaves such labels out of a legend)."""
    text = visible(name).replace("$", r"\$")
    return " " + text if text.startswith("_") else text


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
    lines = [("all", metrics, "o-")] + [(_plot_label(s), d, ".--") for s, d in metrics["by_source"].items()]
    for label, doc, style in lines:
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
    """pass@1 (0-1, Wilson intervals; bootstrap with unequal samples per task) and mean reward (its own scale,
    bootstrap intervals) per source, side by side."""
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
    ax1.set_title("pass@1 (95% Wilson or bootstrap)", fontsize=9)
    ax2.bar(xs, mr, color="#dd8452", yerr=_errbars(mr, [c.get("mean_reward") for c in ci]), capsize=3)
    ax2.axhline(0, color="#888", linewidth=0.6)
    ax2.set_title("mean reward (95% bootstrap)", fontsize=9)
    for ax in (ax1, ax2):
        ax.set_xticks(xs)
        ax.set_xticklabels([_plot_label(n) for n in names], rotation=20, ha="right", fontsize=8)
    fig.suptitle("By task source", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


class _Panel:
    """One task source's finite rewards by outcome, summarised as they stream by: per outcome a count per distinct
    value while the source has at most PANEL_DISTINCT of them, else (drawn as 10 bins over its range) the bin
    counts, from a second pass; each outcome's range either way."""

    __slots__ = ("bins", "counts", "distinct", "hi", "lo", "n")

    def __init__(self) -> None:
        self.n = 0
        self.distinct: set[float] | None = set()
        self.counts: dict[str, Counter[float]] | None = {o: Counter() for o in OUTCOMES}
        self.lo: dict[str, float] = {}
        self.hi: dict[str, float] = {}
        self.bins: dict[str, list[int]] = {}

    def add(self, outcome: str, x: float) -> None:
        self.n += 1
        lo, hi = self.lo.get(outcome), self.hi.get(outcome)
        if lo is None or x < lo:
            self.lo[outcome] = x
        if hi is None or x > hi:
            self.hi[outcome] = x
        if self.distinct is not None and self.counts is not None:
            self.distinct.add(x)
            self.counts[outcome][x] += 1
            if len(self.distinct) > PANEL_DISTINCT:
                self.distinct = self.counts = None

    def range(self) -> tuple[float, float]:
        """(min, max) over outcomes in OUTCOMES order (on ties the earlier outcome's value, as a set built in that
        order keeps)."""
        lo = hi = None
        for o in OUTCOMES:
            if o in self.lo and (lo is None or self.lo[o] < lo):
                lo = self.lo[o]
            if o in self.hi and (hi is None or self.hi[o] > hi):
                hi = self.hi[o]
        assert lo is not None and hi is not None
        return lo, hi

    def values(self) -> list[float]:
        """The sorted distinct rewards (few), built in OUTCOMES order as the plot always did."""
        assert self.counts is not None
        return sorted({x for o in OUTCOMES for x in self.counts[o]})

    def layout(self) -> tuple[list[float], float, Callable[[float], int]]:
        return _panel_bins(self.values()) if self.counts is not None else _range_bins(*self.range())

    def outcome_counts(self, outcome: str, slot: Callable[[float], int], n: int) -> list[int]:
        if self.counts is None:
            return self.bins.get(outcome) or [0] * n
        c = [0] * n
        for v, k in self.counts[outcome].items():
            c[slot(v)] += k
        return c


class _Panels:
    """Every source's _Panel: ``add`` each rollout; when ``needs_second()``, ``add_second`` each again (bins of the
    drawn sources with many distinct rewards). Holds no Rollout."""

    def __init__(self) -> None:
        self.by_source: dict[str, _Panel] = {}
        self._slots: dict[str, Callable[[float], int]] = {}

    @staticmethod
    def _outcome(r: Rollout) -> str:
        from crossgym.scoring.failure import fault

        kind = fault(r.verdict)
        return "passed" if kind == "none" else kind

    def add(self, r: Rollout) -> None:
        from crossgym.eval.metrics import task_source

        if math.isnan(r.verdict.reward):
            return
        source = task_source(r)
        panel = self.by_source.get(source)
        if panel is None:
            panel = self.by_source[source] = _Panel()
        panel.add(self._outcome(r), r.verdict.reward)

    def names(self) -> list[str]:
        return sorted(self.by_source)

    def needs_second(self) -> bool:
        self._slots = {name: self.by_source[name].layout()[2] for name in self.names()[:MAX_PANELS]
                       if self.by_source[name].counts is None}
        for name in self._slots:
            self.by_source[name].bins = {o: [0] * 10 for o in OUTCOMES}
        return bool(self._slots)

    def add_second(self, r: Rollout) -> None:
        from crossgym.eval.metrics import task_source

        if math.isnan(r.verdict.reward):
            return
        source = task_source(r)
        slot = self._slots.get(source)
        if slot is not None:
            self.by_source[source].bins[self._outcome(r)][slot(r.verdict.reward)] += 1


def _panels(rollouts: Iterable[Rollout]) -> _Panels:
    panels = _Panels()
    for r in rollouts:
        panels.add(r)
    if panels.needs_second():
        for r in rollouts:
            panels.add_second(r)
    return panels


def _panel_bins(values: list[float]) -> tuple[list[float], float, Callable[[float], int]]:
    """(bar positions, bar width, reward -> bar index) for one source's sorted distinct rewards: one bar per value
    when there are few, else 10 bins over its own range."""
    if len(values) <= PANEL_DISTINCT:
        step = min((b - a for a, b in zip(values, values[1:], strict=False)), default=1.0) or 1.0
        index = {v: i for i, v in enumerate(values)}
        return values, 0.8 * step, index.__getitem__
    return _range_bins(values[0], values[-1])


def _range_bins(lo: float, hi: float) -> tuple[list[float], float, Callable[[float], int]]:
    """10 bins over [lo, hi]: (bar positions, bar width, reward -> bin)."""
    bins = 10
    span = (hi - lo) / bins
    return [lo + (i + 0.5) * span for i in range(bins)], 0.9 * span, lambda v: min(bins - 1, int((v - lo) / span))


def plot_source_panels(metrics: dict[str, Any], rollouts: Iterable[Rollout] | _Panels, path: Path) -> list[str]:
    """One panel per task source, each on its own reward scale (a 0-1 source next to a 0-2 one), bars stacked by
    outcome (passed, failed, verifier/infra error), titled with its pass@1 and 95% interval. Returns the sources
    left out (past MAX_PANELS). ``rollouts`` is read in one or two streaming passes (or is their summary)."""
    plt = _pyplot()
    panels = rollouts if isinstance(rollouts, _Panels) else _panels(_reiterable(rollouts))
    all_names = panels.names()
    names = all_names[:MAX_PANELS]
    cols = max(1, min(3, len(names)))
    rows = max(1, math.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.6 * rows + 0.5), dpi=100, squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    if not names:
        axes[0][0].text(0.5, 0.5, "no finite rewards", ha="center", va="center")
    for ax, name in zip(axes.flat, names, strict=False):
        panel = panels.by_source[name]
        lo, hi = panel.range()
        xs, width, slot = panel.layout()
        few = panel.counts is not None
        bottom = [0] * len(xs)
        for outcome in OUTCOMES:
            c = panel.outcome_counts(outcome, slot, len(xs))
            if any(c):
                ax.bar(xs, c, width=width, bottom=bottom, color=COLORS[outcome])
                bottom = [b + x for b, x in zip(bottom, c, strict=True)]
        if few:
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{v:g}" for v in xs])
        if lo == hi:
            ax.set_xlim(lo - 1.0, hi + 1.0)
        g = (metrics.get("by_source") or {}).get(name) or {}
        p1, ci = g.get("pass@1"), (g.get("intervals") or {}).get("pass@1")
        p1_text = ("n/a" if p1 is None else f"{p1:.2f}") + (f" [{ci['low']:.2f}, {ci['high']:.2f}]" if ci else "")
        ax.set_title(f"{_plot_label(name)}\npass@1 {p1_text} · n={panel.n}", fontsize=9)
        ax.set_xlabel(f"reward (all {lo:g})" if lo == hi else f"reward ({lo:g} to {hi:g})", fontsize=8)
        ax.set_ylabel("rollouts", fontsize=8)
        ax.tick_params(labelsize=8)
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(color=COLORS[o], label=label) for o, label in OUTCOMES.items()], loc="upper center",
               ncol=len(OUTCOMES), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    fig.savefig(path)
    plt.close(fig)
    return all_names[MAX_PANELS:]


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
            f"<th>pass@1 [95% Wilson; bootstrap with unequal samples]</th><th>mean reward [95% bootstrap]</th><th>errors</th><th>versions</th></tr>"
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


class _Samples:
    """What ``pick_samples`` needs, kept as rollouts stream by (bounded, whatever their number): per kind (errors,
    passes, honest failures) the count and, for the first ``k`` sources seen, their first ``k`` rollouts; of all
    rollouts, the first ``2k`` of the first ``2k`` sources (the fill-up draws from what the first picks left, at
    most ``k`` of them). Round-robin picking only ever reaches those, so the picks are the same as over the list."""

    KINDS = ("errors", "passes", "fails")

    def __init__(self, k: int = SAMPLES) -> None:
        self.k = k
        self.i = 0
        self.counts = dict.fromkeys(self.KINDS, 0)
        self.kept: dict[str, dict[str, list[tuple[int, Rollout]]]] = {name: {} for name in (*self.KINDS, "all")}

    def _keep(self, name: str, limit: int, source: str, r: Rollout) -> None:
        by_source = self.kept[name]
        queue = by_source.get(source)
        if queue is None:
            if len(by_source) >= limit:
                return
            queue = by_source[source] = []
        if len(queue) < limit:
            queue.append((self.i, r))

    def add(self, r: Rollout) -> None:
        from crossgym.eval.metrics import task_source

        source = task_source(r)
        v = r.verdict
        for name, hit in (("errors", v.error is not None), ("passes", bool(v.passed)),
                          ("fails", not v.passed and v.error is None)):
            if hit:
                self.counts[name] += 1
                self._keep(name, self.k, source, r)
        self._keep("all", 2 * self.k, source, r)
        self.i += 1

    def _spread(self, name: str, n: int, skip: set[int] | None = None) -> list[Rollout]:
        from crossgym.eval.failures import _spread

        items = sorted(((i, s, r) for s, queue in self.kept[name].items() for i, r in queue
                        if skip is None or id(r) not in skip), key=lambda t: t[0])
        return [r for _, r in _spread([(s, r) for _, s, r in items], n)]

    def pick(self) -> list[Rollout]:
        k, counts = self.k, self.counts
        n_err = min(counts["errors"], max(1, k // 3)) if counts["errors"] else 0
        n_pass = min(counts["passes"], max(1, k // 3)) if counts["passes"] else 0
        picked = self._spread("errors", n_err) + self._spread("passes", n_pass)
        picked += self._spread("fails", k - len(picked))
        if len(picked) < k:  # too few of some kind: fill with what is left
            picked += self._spread("all", k - len(picked), skip={id(r) for r in picked})
        return picked


def pick_samples(rollouts: Iterable[Rollout], k: int = SAMPLES) -> list[Rollout]:
    """Passes, honest failures and errors, each spread over the task sources (one streaming pass; see _Samples)."""
    samples = _Samples(k)
    for r in rollouts:
        samples.add(r)
    return samples.pick()


def _samples(picked: Sequence[Rollout]) -> str:
    from crossgym.eval.metrics import task_source

    items = []
    for r in picked:
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


def _reiterable(rollouts: Iterable[Rollout]) -> Iterable[Rollout]:
    return list(rollouts) if iter(rollouts) is rollouts else rollouts  # a one-shot iterator cannot be read twice


def write_report(output_dir: str | Path, metrics: dict[str, Any], rollouts: Iterable[Rollout],
                 run_info: dict[str, Any] | None = None) -> Path:
    """Write the three PNG plots and report.html to ``output_dir``; returns the HTML path. ``rollouts`` (a list, or
    an eval store read lazily: crossgym.eval.run.StoredRollouts) is streamed once, twice when a drawn source has many
    distinct rewards; only the sample rollouts shown are held."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    rollouts = _reiterable(rollouts)
    panels, samples = _Panels(), _Samples()
    for r in rollouts:
        panels.add(r)
        samples.add(r)
    if panels.needs_second():
        for r in rollouts:
            panels.add_second(r)
    plot_reward_histogram(metrics, out / PLOTS["reward_hist"])
    plot_pass_at_k(metrics, out / PLOTS["pass_at_k"])
    plot_by_source(metrics, out / PLOTS["by_source"])
    left_out = plot_source_panels(metrics, panels, out / PLOTS["source_panels"])
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
has its own reward axis and its pass@1 with a 95% interval (Wilson; bootstrap over tasks where tasks have unequal
samples).</p>
<div><img src="{PLOTS['source_panels']}" alt="reward per task source, each on its own scale"></div>{more}
<h2>Summary</h2><table>{summary_rows}</table>
<div><img src="{PLOTS['reward_hist']}" alt="reward histogram"><img src="{PLOTS['pass_at_k']}" alt="pass@k curve">
<img src="{PLOTS['by_source']}" alt="per-source bars"></div>
{_group_table("By task source", metrics["by_source"])}
{_group_table("By verifier", metrics["by_verifier"])}
{_samples(samples.pick())}
</body></html>
"""
    path = out / "report.html"
    # a completion (or a reason, a task id) may hold a lone surrogate: written as its escape, never a crash
    path.write_text(doc, encoding="utf-8", errors="backslashreplace")
    return path
