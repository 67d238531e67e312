"""Human-readable rendering for the CLI (rich tables). Only the CLI imports this."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def render_catalog(doc: dict[str, Any]) -> None:
    console = Console()
    for kind in ("verifiers", "environments", "task_sources"):
        table = Table(title=kind.replace("_", " "), title_justify="left", show_edge=False)
        table.add_column("name")
        if kind == "verifiers":
            table.add_column("version")
        table.add_column("description")
        for row in doc[kind]:
            cells = [row["name"]]
            if kind == "verifiers":
                cells.append(row.get("version") or "?")
            cells.append(escape(row.get("error") or row.get("description") or ""))
            table.add_row(*cells)
        console.print(table)
    for kind in ("backends", "engines"):
        table = Table(title=kind, title_justify="left", show_edge=False)
        for col in ("name", "available", "description / why not"):
            table.add_column(col)
        for row in doc[kind]:
            why = escape(row["description"] if row["available"] else f"{row['reason']}")
            if not row["available"] and row.get("install"):
                why += f"\n  install: {escape(row['install'])}"
            table.add_row(row["name"], "[green]yes[/]" if row["available"] else "[red]no[/]", why)
        console.print(table)
    sandbox = doc.get("sandbox")
    if sandbox:
        console.print(f"sandbox: {sandbox}")


def render_check(doc: dict[str, Any]) -> None:
    console = Console()
    for row in doc["verifiers"]:
        mark = "[yellow]skipped[/]" if row.get("skipped") else "[green]ok[/]" if row["ok"] else "[red]WRONG[/]"
        console.print(f"{mark} {row['name']} {row.get('version') or ''}")
        if row.get("error"):
            console.print(f"    {row['error']}")
        for ex in row["examples"]:
            if not ex["ok"]:
                console.print(f"    expected {ex['expect']}, got {ex['got']} (reward {ex['reward']}) "
                              f"{ex.get('note', '')}: {ex.get('reason', '')}")
    rows = doc["verifiers"]
    skipped = sum(1 for r in rows if r.get("skipped"))
    bad = sum(not r["ok"] for r in rows)
    line = f"{len(rows) - bad - skipped}/{len(rows)} verifiers ok"
    if skipped:
        line += f", {skipped} skipped (not checked here: each needs a service, see above)"
    if bad:
        line += f", {bad} wrong"
    console.print(line)
