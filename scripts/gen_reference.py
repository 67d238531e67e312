"""Generate docs/reference/cli.md (from the CLI itself) and docs/reference/configuration.md (from RunConfig).

Run: python scripts/gen_reference.py [--check]   (--check exits 1 when the committed pages are stale)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"


def cli_reference() -> str:
    import typer

    from crossgym.cli import app

    root = typer.main.get_command(app)
    lines = ["# CLI reference", "", "Generated from the CLI itself by `scripts/gen_reference.py`; do not edit.", ""]
    ctx = root.context_class(root, info_name="crossgym")  # typer ships its own click: stay duck-typed
    for name in sorted(root.list_commands(ctx)):  # type: ignore[attr-defined]
        cmd = root.get_command(ctx, name)  # type: ignore[attr-defined]
        if cmd is None:
            continue
        sub = cmd.context_class(cmd, info_name=name, parent=ctx)
        usage = " ".join(cmd.collect_usage_pieces(sub))
        lines += [f"## crossgym {name}", "", (cmd.help or "").strip().split("\n\n")[0], "", "```text",
                  f"crossgym {name} {usage}".rstrip(), "```", ""]
        rows = []
        for p in cmd.params:
            if p.param_type_name == "argument":
                rows.append((f"`{(p.name or '').upper()}`", (getattr(p, "help", None) or "argument").replace("|", "\\|"), ""))
            else:
                opts = ", ".join(f"`{o}`" for o in p.opts)
                default = "" if p.default in (None, False, ()) or callable(p.default) else f"`{p.default}`"
                rows.append((opts, (getattr(p, "help", None) or "").replace("|", "\\|"), default))
        if rows:
            lines += ["| option | meaning | default |", "|---|---|---|"]
            lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
            lines.append("")
    lines += ["Every `--json` prints one JSON document on stdout. User errors print one line on stderr and exit 2;",
              "`crossgym --debug ...` shows the traceback instead.", ""]
    return "\n".join(lines)


def _type_name(annotation: Any) -> str:
    text = str(annotation) if getattr(annotation, "__args__", None) else getattr(annotation, "__name__", None)
    text = text or str(annotation)
    return text.replace("typing.", "").replace("crossgym.config.run.", "").replace("|", "\\|")


def config_reference() -> str:
    from pydantic import BaseModel

    from crossgym.config import RunConfig

    lines = ["# Configuration reference", "",
             "Generated from `RunConfig` by `scripts/gen_reference.py`; do not edit. Unknown keys are errors that",
             "name the file, the field and the nearest known field.", ""]
    seen: set[str] = set()

    def model_section(model: type[BaseModel], prefix: str) -> None:
        if model.__name__ in seen:
            return
        seen.add(model.__name__)
        lines.extend([f"## `{prefix or 'top level'}` ({model.__name__})", "", (model.__doc__ or "").strip(), "",
                      "| field | type | default | meaning |", "|---|---|---|---|"])
        nested = []
        for name, field in model.model_fields.items():
            value = None if field.is_required() else field.get_default(call_default_factory=True)
            default = ("required" if field.is_required() else
                       "(see below)" if isinstance(value, BaseModel) else repr(value))
            doc = (field.description or "").replace("\n", " ")
            lines.append(f"| `{name}` | {_type_name(field.annotation)} | `{default}` | {doc} |")
            for arg in (*getattr(field.annotation, "__args__", ()), field.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    nested.append((arg, f"{prefix}.{name}" if prefix else name))
                inner = getattr(arg, "__args__", ())
                for a in inner:
                    if isinstance(a, type) and issubclass(a, BaseModel):
                        nested.append((a, f"{prefix}.{name}[]" if prefix else f"{name}[]"))
        lines.append("")
        for sub, path in nested:
            model_section(sub, path)

    model_section(RunConfig, "")
    return "\n".join(lines)


def main() -> int:
    pages = {"cli.md": cli_reference(), "configuration.md": config_reference()}
    stale = []
    for name, text in pages.items():
        path = OUT / name
        if "--check" in sys.argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print("stale generated docs (run python scripts/gen_reference.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
