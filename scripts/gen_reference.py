"""Generate docs/reference/cli.md (from the CLI itself) and docs/reference/configuration.md (from RunConfig).

Run: python scripts/gen_reference.py [--check]   (--check exits 1 when the committed pages are stale)
"""

from __future__ import annotations

import sys
import types
import typing
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


def _type_text(annotation: Any) -> str:
    """An annotation as a reader writes it: unions with |, Annotated metadata (tags, discriminators) left out."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join("None" if a is type(None) else _type_text(a) for a in args)
    if origin is not None and args:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_text(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("crossgym.config.run.", "")


def _type_name(annotation: Any) -> str:
    return _type_text(annotation).replace("|", "\\|")


def _models_in(annotation: Any, path: str) -> list[tuple[Any, str]]:
    """(model, path) for every pydantic model an annotation can hold; a list's items get ``[]``."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, path)]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0], path)
    sub = f"{path}[]" if origin in (list, tuple) else path
    return [m for a in args for m in _models_in(a, sub)]


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
            nested.extend(_models_in(field.annotation, f"{prefix}.{name}" if prefix else name))
        lines.append("")
        queue.extend(nested)

    # breadth first: a section shared by several fields (environment, verifiers[]) is named by its top-level use
    queue: list[tuple[type[BaseModel], str]] = [(RunConfig, "")]
    while queue:
        model_section(*queue.pop(0))
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
