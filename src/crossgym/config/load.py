"""Reading a RunConfig from YAML or a mapping. Errors are one ConfigError line naming the file, the field and the fix."""

from __future__ import annotations

import difflib
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from crossgym.config.files import read_user_text
from crossgym.config.run import BlendConfig, RunConfig, TasksConfig
from crossgym.protocol.errors import ConfigError

_FIELD_FIXES = {
    "missing": "add the field",
    "extra_forbidden": "remove it or check its spelling",
}


#: the tags of a tagged union (RunConfig.tasks): pydantic puts them in an error's loc; users never wrote them
_UNION_TAGS = {"single": TasksConfig, "blend": BlendConfig}


def _models_in(ann: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions, lists and Annotated)."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return [m for a in typing.get_args(ann) for m in _models_in(a)]


def _user_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in loc if not (isinstance(p, str) and p in _UNION_TAGS))


def _where_and_fix(err: dict[str, Any], model: type[BaseModel]) -> tuple[str, str]:
    loc = ".".join(str(p) for p in _user_loc(err["loc"])) or "(top level)"
    kind = err["type"]
    fix = _FIELD_FIXES.get(kind, "")
    if kind == "extra_forbidden":
        # suggest the nearest known field at that level
        target: Any = model
        for part in err["loc"][:-1]:
            if isinstance(part, int):  # an item of a list of sections (verifiers: [...]) has the item's fields
                continue
            if isinstance(part, str) and part in _UNION_TAGS:
                target = _UNION_TAGS[part]
                continue
            fld = getattr(target, "model_fields", {}).get(part)
            models = _models_in(getattr(fld, "annotation", None))
            target = models[0] if models else None
            if target is None:
                break
        known = list(getattr(target, "model_fields", {}) or {})
        close = difflib.get_close_matches(str(err["loc"][-1]), known, n=1)
        if close:
            fix = f"did you mean '{close[0]}'?"
        elif known:
            fix = f"known fields: {', '.join(known)}"
    if not fix:
        fix = "see docs/reference/configuration.md"
    return loc, fix


def parse_run_config(data: Any, *, source: str = "<config>") -> RunConfig:
    """Validate a mapping into a RunConfig; the first problem becomes one ConfigError line."""
    if not isinstance(data, dict):
        got = "an empty document" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"expected a mapping of settings, got {got}", where=source,
                          fix="write the config as YAML key: value pairs, e.g. examples/single_turn.yaml")
    if {"prompt", "verifier"} <= set(data) and "model" not in data:
        raise ConfigError("this is a task, not a RunConfig", where=source,
                          fix="name task files under tasks.files (or pass --task/--tasks); a config looks like "
                              "examples/single_turn.yaml")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        # an unknown key first: a typo'd `modle:` also makes `model` missing, and the typo is the news
        err = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        loc, fix = _where_and_fix(dict(err), RunConfig)
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        if "input" in err and err["type"] not in ("missing", "extra_forbidden", "value_error") and not isinstance(
                err["input"], dict):  # a crossgym validator's own message names the value it refuses
            msg = f"{msg} (got {err['input']!r})"
        more = len(exc.errors()) - 1
        if more:
            msg = f"{msg} [+{more} more problem{'s' if more > 1 else ''}]"
        raise ConfigError(msg, where=f"{source}: {loc}", fix=fix) from None


def load_run_config(path: str | Path) -> RunConfig:
    """Read a YAML RunConfig; relative task files resolve against the config's folder."""
    p = Path(path).expanduser()
    text = read_user_text(p, what="config file", fix_missing="check the path")
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader that refuses duplicate keys)
    except _DuplicateKey as exc:
        raise ConfigError(f"duplicate key {exc.key!r} (first at line {exc.first})", where=f"{p}:{exc.line}",
                          fix="merge the two into one; YAML would silently keep only the last") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        fix = "indent with spaces, not tabs" if "'\\t'" in problem else "fix the YAML syntax at that line"
        raise ConfigError(f"invalid YAML: {problem}", where=where, fix=fix) from None
    except RecursionError:  # even balanced brackets, a few thousand deep, exhaust the parser's stack
        raise ConfigError("the YAML nests too deeply to read", where=str(p),
                          fix="a config is nested a few levels; look for a runaway [ or { in it") from None
    except ValueError as exc:  # an integer over Python's digit limit (4300), e.g. max_steps: 999...9
        raise ConfigError(f"a value cannot be read: {exc}", where=str(p),
                          fix="write numbers of ordinary size; a long one as a quoted string") from None
    try:
        data = _resolve_files(data, p.parent)
        return parse_run_config(data, source=str(p))
    except RecursionError:
        raise ConfigError("the config nests too deeply to check", where=str(p),
                          fix="a config is nested a few levels; look for a runaway [ or { in it") from None


class _DuplicateKey(yaml.YAMLError):  # type: ignore[misc]
    def __init__(self, key: str, line: int, first: int) -> None:
        super().__init__(f"duplicate key {key!r} at line {line}")
        self.key, self.line, self.first = key, line, first


class _UniqueKeyLoader(yaml.SafeLoader):  # type: ignore[misc]
    """yaml.SafeLoader, except that a key given twice in one mapping is an error naming it and its lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # the base class reports an unhashable key
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(str(key), line, seen[key])
            seen[key] = line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _resolve_files(data: Any, base: Path) -> Any:
    if not isinstance(data, dict):
        return data
    for key in ("tasks", "eval_tasks"):
        section = data.get(key)
        parts = section.get("parts") if isinstance(section, dict) else section
        for sec in (parts if isinstance(parts, list) else [section]):
            if isinstance(sec, dict) and isinstance(sec.get("files"), list):
                sec["files"] = [f if Path(str(f)).is_absolute() else str(base / str(f)) for f in sec["files"]]
    return data
