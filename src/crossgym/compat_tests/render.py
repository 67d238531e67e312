"""The matrix as a terminal table (rich) and as one self-contained HTML page."""

from __future__ import annotations

import html as _html
from typing import Any

from crossgym.text.visible import visible

_LABEL = {"pass": "pass", "mismatch": "MISMATCH", "error": "ERROR", "skip": "skip", "no_driver": "no driver",
          "unavailable": "unavailable", "not_installed": "not installed"}
_STYLE = {"pass": "green", "mismatch": "bold red", "error": "bold red", "skip": "dim", "no_driver": "yellow",
          "unavailable": "yellow", "not_installed": "dim"}
_COLOUR = {"pass": "#d7f5dd", "mismatch": "#ffd6d6", "error": "#ffb3b3", "skip": "#eeeeee", "no_driver": "#fff3c4",
           "unavailable": "#fff3c4", "not_installed": "#f4f4f4", "fail": "#ffd6d6"}


def conformance_status(v: dict[str, Any]) -> str:
    """"pass", "fail" (naming the failed checks) or "skip" for a verifier's conformance row."""
    checks = v.get("conformance") or {}
    failed = [c for c, r in checks.items() if r["status"] in ("fail", "error")]
    if failed:
        return "fail: " + ", ".join(failed)
    if checks and all(r["status"] == "skip" for r in checks.values()):
        return "skip"
    return "pass" if checks else "-"


def cell_text(cell: dict[str, Any]) -> str:
    status = cell["status"]
    if status == "pass":
        return f"pass ({cell.get('compared', 0)})"
    if status == "mismatch":
        return f"MISMATCH {cell.get('mismatches')}/{cell.get('compared')}"
    return str(_LABEL.get(status, status))


def _backend_names(doc: dict[str, Any]) -> list[str]:
    return sorted(doc["backends"])


def advantage_rows(doc: dict[str, Any]) -> tuple[list[str], list[str], str]:
    """(variant rows, backend columns, tolerance text) of the advantages table: every variant any backend reported
    (VARIANTS order first), the backends with an advantages result, and the check's tolerance."""
    from crossgym.compat_tests.advantages import ATOL, ROWS, RTOL

    backends = [b for b in _backend_names(doc) if doc["backends"][b].get("advantages")]
    seen = {v for b in backends for v in doc["backends"][b]["advantages"]}
    rows = [v for v in ROWS if v in seen] + sorted(seen - set(ROWS))
    tols = {(r.get("extra") or {}).get("rtol") for b in backends for r in doc["backends"][b]["advantages"].values()}
    tols.discard(None)
    rtol = tols.pop() if len(tols) == 1 else RTOL
    return rows, backends, f"rtol {rtol:g}, atol {ATOL:g}"


def advantage_cell(r: dict[str, Any] | None) -> str:
    """One backend x variant cell: "pass (N)", "FAIL", "ERROR", or "n/a" for a skip (the detail says why)."""
    if r is None:
        return "-"
    status = r["status"]
    if status == "pass":
        return f"pass ({r.get('checked', 0)})"
    return {"fail": "FAIL", "error": "ERROR"}.get(status, "n/a")


def blend_rows(doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The blend checks (``parity_blend:<mode>``, ``tokens_blend``) any backend ran, and the backends that ran one."""
    backends = [b for b in _backend_names(doc) if doc["backends"][b].get("blend")]
    rows: list[str] = []
    for b in backends:
        rows += [name for name in doc["backends"][b]["blend"] if name not in rows]
    return rows, backends


def blend_cell(r: dict[str, Any]) -> str:
    """A blend check's status with its sample and part counts (the token check counts parts, parity names them)."""
    parts = (r.get("extra") or {}).get("parts") or {}
    n_parts = parts if isinstance(parts, int) else len(parts)
    return f"{r['status']} ({r.get('checked', 0)} samples over {n_parts} parts)" if parts else str(r["status"])


def _plain(text: object) -> str:
    """One line for rich with markup: ``visible`` (details quote completions and reasons, and rich passes ESC to
    the terminal) and its brackets escaped (a ``[link=...]`` in them would be rich markup)."""
    from rich.markup import escape

    return escape(visible(text))


def render_text(doc: dict[str, Any]) -> None:
    """Print the matrix, then the first mismatch of each failing cell, install commands and failed checks. Every
    name, detail and reason goes through ``_plain`` (markup) or ``visible`` (markup=False)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console = Console(width=max(120, 28 + 16 * len(doc["backends"])), soft_wrap=False)
    backends = _backend_names(doc)
    table = Table(title="crossgym compat: reward through each backend's native path vs Verdict.reward")
    table.add_column("verifier")
    table.add_column("conformance")
    for b in backends:
        table.add_column(_plain(b))
    for vname in sorted(doc["verifiers"]):
        conf = conformance_status(doc["verifiers"][vname])
        cells = []
        for b in backends:
            cell = doc["matrix"].get(vname, {}).get(b)
            cells.append("-" if cell is None else
                         f"[{_STYLE.get(cell['status'], '')}]{_plain(cell_text(cell))}[/]")
        table.add_row(_plain(vname), f"[{'red' if conf.startswith('fail') else 'green'}]{_plain(conf)}[/]", *cells)
    console.print(table)
    rows, adv_backends, tol = advantage_rows(doc)
    if rows:
        adv = Table(title=f"advantages: each backend's own advantage code vs crossgym's reference ({tol})")
        adv.add_column("variant")
        for b in adv_backends:
            adv.add_column(_plain(b))
        style = {"pass": "green", "fail": "bold red", "error": "bold red", "skip": "dim"}
        for v in rows:
            cells = []
            for b in adv_backends:
                r = doc["backends"][b]["advantages"].get(v)
                cells.append("-" if r is None else f"[{style.get(r['status'], '')}]{_plain(advantage_cell(r))}[/]")
            adv.add_row(_plain(v), *cells)
        console.print(adv)
        for b in adv_backends:
            for v, r in doc["backends"][b]["advantages"].items():
                if r["status"] in ("fail", "error"):
                    console.print(visible(f"{b} x {v}: {r['status']}: {r.get('detail', '')}"), markup=False,
                                  highlight=False)
    for vname, row in sorted(doc["matrix"].items()):
        for b, cell in sorted(row.items()):
            fm = cell.get("first_mismatch")
            if cell["status"] in ("mismatch", "error") and fm:
                what = f"{fm.get('why')} on {fm.get('sample')} (mode {fm.get('mode', '?')}): {fm.get('completion')!r}"
                console.print(f"[red]{_plain(vname)} x {_plain(b)}[/]: {_plain(what)}")
    for b in backends:
        info = doc["backends"][b]
        if info["status"] != "installed":
            hint = f"; install: {info['install']}" if info.get("install") else ""
            console.print(visible(f"{b}: {_LABEL.get(info['status'], info['status'])} ({info.get('reason', '')})"
                                  f"{hint}"), markup=False, highlight=False)
        tok = info.get("tokens")
        if tok:
            state = "n/a" if tok["status"] == "skip" else tok["status"]
            detail = str(tok.get("detail", "")).removeprefix("n/a: ")
            console.print(visible(f"{b}: token consistency {state} {detail}".rstrip()), markup=False)
        for name, r in (info.get("blend") or {}).items():  # compat_tests.blend: per-part parity, mixed-batch ids
            console.print(visible(f"{b}: blend {name} {blend_cell(r)} {r.get('detail', '')}".rstrip()), markup=False)
        plans = info.get("plans") or {}
        if plans:
            bad = [k for k, r in plans.items() if r["status"] in ("fail", "error")]
            console.print(visible(f"{b}: plans {len(plans) - len(bad)}/{len(plans)} valid" +
                                  (f"; failed: {', '.join(bad)}" if bad else "")), markup=False)
    for item in doc["summary"]["failed_checks"]:
        console.print(f"[red]failed[/]: {_plain(item)}")
    console.print("[green]ok[/]" if doc["summary"]["ok"] else "[red]not ok[/]")


def _e(x: Any) -> str:
    return _html.escape(str(x), quote=True)


def _check_cell(r: dict[str, Any] | None, *, why_skipped: bool = False) -> str:
    """A check's status cell (detail as tooltip); ``why_skipped``: a skip reads "n/a: why" in the cell itself."""
    if r is None:
        return "<td>-</td>"
    tip = r.get("detail") or ""
    text = _e(r["status"])
    if why_skipped and r["status"] == "skip":
        text = "n/a" + (f": {_e(tip.removeprefix('n/a: '))}" if tip else "")
    return f'<td style="background:{_COLOUR.get(r["status"], "#fff")}" title="{_e(tip)}">{text}</td>'


def render_html(doc: dict[str, Any]) -> str:
    """One HTML page: the matrix (hover for details), first mismatches, backends, conformance, environments."""
    backends = _backend_names(doc)
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>crossgym compat matrix</title><style>",
           "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
           "td,th{border:1px solid #ccc;padding:4px 8px;font-size:14px}th{background:#f0f0f0}"
           "code{font-size:12px}</style></head><body>",
           f"<h1>crossgym compat matrix</h1><p>crossgym {_e(doc['crossgym_version'])}; "
           f"{'<b style=color:green>ok</b>' if doc['summary']['ok'] else '<b style=color:red>not ok</b>'}; "
           f"runs: {len(doc['runs'])}</p>",
           "<h2>Reward parity (verifier x backend)</h2><table><tr><th>verifier</th><th>conformance</th>"]
    out += [f"<th>{_e(b)}</th>" for b in backends] + ["</tr>"]
    for vname in sorted(doc["verifiers"]):
        conf = conformance_status(doc["verifiers"][vname])
        out.append(f"<tr><th>{_e(vname)}</th><td style='background:{_COLOUR['fail' if conf.startswith('fail') else 'pass']}'>"
                   f"{_e(conf)}</td>")
        for b in backends:
            cell = doc["matrix"].get(vname, {}).get(b)
            if cell is None:
                out.append("<td>-</td>")
                continue
            tip = cell.get("detail") or cell.get("install") or ""
            out.append(f"<td style='background:{_COLOUR.get(cell['status'], '#fff')}' title='{_e(tip)}'>"
                       f"{_e(cell_text(cell))}</td>")
        out.append("</tr>")
    out.append("</table>")
    mismatches = [(v, b, c) for v, row in sorted(doc["matrix"].items()) for b, c in sorted(row.items())
                  if c["status"] in ("mismatch", "error") and c.get("first_mismatch")]
    if mismatches:
        out.append("<h2>First differing sample</h2><table><tr><th>verifier</th><th>backend</th><th>mode</th>"
                   "<th>sample</th><th>why</th><th>completion</th></tr>")
        for v, b, c in mismatches:
            fm = c["first_mismatch"]
            out.append(f"<tr><td>{_e(v)}</td><td>{_e(b)}</td><td>{_e(fm.get('mode', ''))}</td>"
                       f"<td>{_e(fm.get('sample'))}</td><td>{_e(fm.get('why'))}</td>"
                       f"<td><code>{_e(fm.get('completion'))}</code></td></tr>")
        out.append("</table>")
    rows, adv_backends, tol = advantage_rows(doc)
    if rows:
        out.append(f"<h2>Advantages (each backend's own advantage code vs crossgym's reference, {_e(tol)})</h2>"
                   "<table><tr><th>variant</th>" + "".join(f"<th>{_e(b)}</th>" for b in adv_backends) + "</tr>")
        for v in rows:
            cells = []
            for b in adv_backends:
                r = doc["backends"][b]["advantages"].get(v)
                if r is None:
                    cells.append("<td>-</td>")
                    continue
                cells.append(f'<td style="background:{_COLOUR.get(r["status"], "#fff")}" '
                             f'title="{_e(r.get("detail") or "")}">{_e(advantage_cell(r))}</td>')
            out.append(f"<tr><th>{_e(v)}</th>{''.join(cells)}</tr>")
        out.append("</table>")
    rows, blend_backends = blend_rows(doc)
    if rows:
        out.append("<h2>Blends (per-part reward parity and mixed-batch tokens over a multi-environment blend)</h2>"
                   "<table><tr><th>check</th>" + "".join(f"<th>{_e(b)}</th>" for b in blend_backends) + "</tr>")
        for name in rows:
            cells = []
            for b in blend_backends:
                r = doc["backends"][b]["blend"].get(name)
                cells.append("<td>-</td>" if r is None else
                             f'<td style="background:{_COLOUR.get(r["status"], "#fff")}" '
                             f'title="{_e(r.get("detail") or "")}">{_e(blend_cell(r))}</td>')
            out.append(f"<tr><th>{_e(name)}</th>{''.join(cells)}</tr>")
        out.append("</table>")
    out.append("<h2>Backends</h2><table><tr><th>backend</th><th>status</th><th>framework</th><th>driver</th>"
               "<th>token consistency</th><th>plans</th><th>install / reason</th></tr>")
    for b in backends:
        i = doc["backends"][b]
        drv = i.get("driver") or {}
        plans = i.get("plans") or {}
        bad = [k for k, r in plans.items() if r["status"] in ("fail", "error")]
        plan_txt = f"{len(plans) - len(bad)}/{len(plans)} valid" + (f" (failed: {', '.join(bad)})" if bad else "") \
            if plans else "-"
        out.append(f"<tr><td>{_e(b)}</td><td style='background:{_COLOUR.get(i['status'], '#fff')}'>"
                   f"{_e(i['status'])}</td><td>{_e(i.get('framework_version') or '-')}</td>"
                   f"<td>{_e(drv.get('module', '-'))}</td>{_check_cell(i.get('tokens'), why_skipped=True)}<td>{_e(plan_txt)}</td>"
                   f"<td>{_e(i.get('install') or '')} {_e(i.get('reason') or '')}</td></tr>")
    out.append("</table>")
    checks = sorted({c for v in doc["verifiers"].values() for c in v["conformance"]})
    out.append("<h2>Verifier conformance</h2><table><tr><th>verifier</th>" +
               "".join(f"<th>{_e(c)}</th>" for c in checks) + "</tr>")
    for vname, v in sorted(doc["verifiers"].items()):
        out.append(f"<tr><th>{_e(vname)}</th>" + "".join(_check_cell(v["conformance"].get(c)) for c in checks)
                   + "</tr>")
    out.append("</table>")
    if doc["environments"]:
        echecks = sorted({c for e in doc["environments"].values() for c in e["checks"]})
        out.append("<h2>Environment conformance</h2><table><tr><th>environment</th>" +
                   "".join(f"<th>{_e(c)}</th>" for c in echecks) + "</tr>")
        for ename, e in sorted(doc["environments"].items()):
            out.append(f"<tr><th>{_e(ename)}</th>" + "".join(_check_cell(e["checks"].get(c)) for c in echecks)
                       + "</tr>")
        out.append("</table>")
    out.append("<h2>Runs</h2><ul>" + "".join(
        f"<li>{_e(r['created'])} python {_e(r['python'])} in {_e(r['prefix'])}: backends "
        f"{_e(', '.join(r.get('backends', [])) or 'none')} ({_e(r.get('seconds', '?'))} s)</li>" for r in doc["runs"])
               + "</ul></body></html>")
    return "\n".join(out)
