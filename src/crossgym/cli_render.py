"""Human-readable rendering for the CLI (rich tables). Only the CLI imports this."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from crossgym.text.visible import visible


def _plain(text: object, *, lines: bool = False) -> str:
    """Text for a rich markup string: its control characters ``visible`` (rich passes ESC to the terminal; newlines
    too unless ``lines``, for a table cell or a message of several lines) and its brackets escaped (a
    ``[link=...]`` in a plugin's reason or a program's output would be rich markup)."""
    return escape(visible(text, lines=lines))


def render_catalog(doc: dict[str, Any]) -> None:
    console = Console()
    for kind in ("verifiers", "environments", "task_sources"):
        table = Table(title=kind.replace("_", " "), title_justify="left", show_edge=False)
        table.add_column("name")
        if kind == "verifiers":
            table.add_column("version")
        table.add_column("description")
        for row in doc[kind]:
            cells = [_plain(row["name"])]
            if kind == "verifiers":
                cells.append(_plain(row.get("version") or "?"))
            cells.append(_plain(row.get("error") or row.get("description") or "", lines=True))
            table.add_row(*cells)
        console.print(table)
    for kind in ("backends", "engines"):
        table = Table(title=kind, title_justify="left", show_edge=False)
        for col in ("name", "available", "description / why not"):
            table.add_column(col)
        for row in doc[kind]:
            why = _plain(row["description"] if row["available"] else f"{row['reason']}", lines=True)
            if not row["available"] and row.get("install"):
                why += f"\n  install: {_plain(row['install'])}"
            table.add_row(_plain(row["name"]), "[green]yes[/]" if row["available"] else "[red]no[/]", why)
        console.print(table)
    sandbox = doc.get("sandbox")
    if sandbox:
        console.print(f"sandbox: {_plain(sandbox)}")


def render_check(doc: dict[str, Any]) -> None:
    console = Console()
    for row in doc["verifiers"]:
        mark = "[yellow]skipped[/]" if row.get("skipped") else "[green]ok[/]" if row["ok"] else "[red]WRONG[/]"
        console.print(f"{mark} {_plain(row['name'])} {_plain(row.get('version') or '')}")
        if row.get("error"):
            console.print(f"    {_plain(row['error'])}")
        for ex in row["examples"]:
            if not ex["ok"]:  # the reason quotes what the example's program printed
                console.print("    " + _plain(f"expected {ex['expect']}, got {ex['got']} (reward {ex['reward']}) "
                                              f"{ex.get('note', '')}: {ex.get('reason', '')}"))
    rows = doc["verifiers"]
    skipped = sum(1 for r in rows if r.get("skipped"))
    bad = sum(not r["ok"] for r in rows)
    line = f"{len(rows) - bad - skipped}/{len(rows)} verifiers ok"
    if skipped:
        line += f", {skipped} skipped (not checked here: each needs a service, see above)"
    if bad:
        line += f", {bad} wrong"
    console.print(line)
