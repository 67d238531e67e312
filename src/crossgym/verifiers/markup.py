"""xml_valid and yaml_valid: the completion is well-formed XML / safe YAML, with attack inputs refused.

XML is parsed by expat with DTDs refused outright (no DOCTYPE, no entity declarations), so entity-expansion
("billion laughs") and external-entity attacks cannot start. YAML goes through ``safe_load`` (no Python objects)
with alias counts, nesting, node counts and merge-key copies capped (alias bombs, deep nesting, documents too costly
for the pure-Python loader, merge expansion), judged as PyYAML's pure-Python loader judges on every machine, libyaml
used only where it cannot differ.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NoReturn

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import extract_fenced, is_single_block, iter_fenced
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import strip_think
from crossgym.verifiers.json_checks import JSON_TYPES, json_type

#: YAML documents with more aliases than this are refused (alias expansion bombs)
MAX_YAML_ALIASES = 100
_ALIAS = re.compile(r"(?:^|[\s\[{,:-])\*[^\s,\[\]{}]+")


class _Refused(Exception):
    pass


def _body(text: str, fenced: str, langs: tuple[str, ...]) -> str:
    """The document: the whole text, or (``allow``) the whole text being one fenced block in one of ``langs``,
    as json_valid reads it; ``require`` takes the last such block, prose around it allowed. Text after a block
    (``allow``) is part of the document: "```xml\n<note/>\n```\nnot XML <<<" is not one XML document."""
    text = text.strip()
    if fenced == "forbid":
        return text
    if fenced == "require":
        block = extract_fenced(text, langs)
        if block is None:
            raise Malformed(f"no ```{langs[0]} fenced block")
        return block.strip()
    if text.startswith(("```", "~~~")):
        blocks = list(iter_fenced(text))
        if len(blocks) == 1 and blocks[0][0] in langs and is_single_block(text):
            return blocks[0][1].strip()
    return text


class _MarkupBase(BaseVerifier):
    langs: tuple[str, ...] = ()

    def __init__(self, *, fenced: str = "allow", think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        if fenced not in ("allow", "require", "forbid"):
            raise VerifierError(f"verifier {self.name!r}: fenced={fenced!r} must be allow, require or forbid "
                                "(fix: pass one of them, or leave it out for allow)")
        self.fenced, self.think = fenced, bool(think)

    def text(self, completion: Completion) -> str:
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Malformed("blank completion")
        body = _body(text, self.fenced, self.langs)
        if not body:
            raise Malformed("empty fenced block")
        return body


def parse_xml(text: str) -> str:
    """The root element's name of well-formed XML; _Refused for DTDs, ValueError for bad XML."""
    from xml.parsers import expat

    p = expat.ParserCreate()
    root: list[str] = []

    def refuse(*_: Any) -> NoReturn:
        raise _Refused("DTDs and entity declarations are refused")

    def start(name: str, _attrs: Any) -> None:
        if not root:
            root.append(name)

    p.StartDoctypeDeclHandler = refuse
    p.EntityDeclHandler = refuse
    p.ExternalEntityRefHandler = refuse
    p.StartElementHandler = start
    try:
        p.Parse(text.encode("utf-8"), True)
    except expat.ExpatError as exc:
        raise ValueError(f"not well-formed XML: {expat.ErrorString(exc.code)} at line {exc.lineno}") from None
    except (LookupError, UnicodeError, TypeError) as exc:  # an XML declaration naming no usable text encoding
        # (encoding="bogus", "hex", "rot13"): the document's fault, not the verifier's (it was an exception verdict)
        raise ValueError(f"not well-formed XML: its declared encoding cannot be read ({clip(str(exc), 80)})") from None
    return root[0] if root else ""


class XmlValid(_MarkupBase):
    """The completion is one well-formed XML document.

    answer: null, or the required root element name ("config").
    params: fenced ("allow": bare or one ```xml block | "require" | "forbid"), think (True).
    Not-well-formed XML or the wrong root fails; a DOCTYPE or entity declaration (entity-expansion attacks) and a
    blank completion are malformed.
    """

    name = "xml_valid"
    version = "3"  # 2: with fenced "allow", a block followed (or preceded) by other text is not one document; 3: a
    # declared encoding that cannot be read (encoding="bogus") fails the document (it was an exception verdict)
    description = "well-formed XML (DTDs refused: no entity-expansion attacks), optional root element"
    langs = ("xml", "html", "")

    def score(self, task: Task, completion: Completion) -> Verdict:
        if task.answer is not None and not isinstance(task.answer, str):
            raise BadTask("xml_valid answer must be null or the root element name")
        body = self.text(completion)
        try:
            root = parse_xml(body)
        except _Refused as exc:
            raise Malformed(str(exc)) from None
        except ValueError as exc:
            return Verdict.ok(0.0, reason=str(exc))
        if task.answer and root != task.answer:
            return Verdict.ok(0.0, reason=f"root element <{root}>, expected <{task.answer}>")
        return Verdict.ok(1.0, reason=f"well-formed XML, root <{root}>")

    @classmethod
    def examples(cls) -> list[Example]:
        bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
                "<lolz>&lol2;</lolz>")
        return [
            cls.example("note", '```xml\n<note><to>Ada</to><body>Hi &amp; bye</body></note>\n```', "pass"),
            cls.example(None, "<a><b></a></b>", "fail", "crossed tags"),
            cls.example("note", "<memo/>", "fail", "wrong root"),
            cls.example(None, bomb, "malformed", "billion laughs refused"),
        ]


#: YAML nesting deeper than this (nodes on the deepest path, a top-level scalar is 1) is refused, on every machine
MAX_YAML_DEPTH = 100
#: YAML of more nodes than this (over all its documents; an alias is no new node) is refused: PyYAML's pure-Python
#: loader spends 17 to 40 µs on each ("[a,a,a,...]" of 1 MB took 8.6 s, "a\n---\n" repeated 3.8 s, timestamps
#: ~40 µs each); refusing takes at most this many of them (~0.4 s)
MAX_YAML_NODES = 20_000
#: YAML whose merge keys (``<<: *defaults``) read more mapping entries than this in all is refused: each merge copies
#: the merged mapping's entries again (99 merges of one 75,000-entry mapping took 11 s); PyYAML before 6.0.4 (which
#: ``PyYAML>=6`` allows) also kept the copies of copies, so a chain of merges grew exponentially (526 characters:
#: 30 s on 6.0.3), where crossgym's loaders merge as 6.0.4 does on every version (``_flatten_mapping``)
MAX_YAML_MERGED = 100_000
#: Where libyaml's scanner is known or not shown to agree with PyYAML's pure-Python one, the reference decides:
#: any character but newline and the printable ones (tabs, CR, NEL, U+2028/9, BOMs, controls, surrogates, U+FFFE/F,
#: no-break spaces), a backslash (double-quoted escapes: pure accepts a lone surrogate and raises on \U00110000,
#: libyaml refuses both), in a text with a flow collection a '?' (pure ends a flow plain scalar at '?', libyaml
#: does not: '[a?b]'), a '!' that can start a tag (pure: a lone '!' node is null, libyaml: ''), a '%' directive
#: (pure takes %YAML 1.3 and unknown directives, libyaml refuses them) and a block scalar header followed by '#'
#: ('>#': libyaml takes a comment, pure refuses).
_TAG = re.compile(r"(?<![0-9A-Za-z])!")
_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")


def libyaml_may_differ(text: str) -> bool:
    """True where libyaml's reading of ``text`` is not shown to match the reference's (the classes above)."""
    return ("\\" in text or not text.replace("\n", " ").isprintable()
            or ("?" in text and ("[" in text or "{" in text))
            or text.startswith("%") or "\n%" in text
            or ("!" in text and _TAG.search(text) is not None)
            or ("#" in text and _HEADER_COMMENT.search(text) is not None))


class _Deep(Exception):
    pass


class _Many(Exception):
    pass


def _flatten_mapping(self: Any, node: Any) -> None:
    """SafeConstructor.flatten_mapping as PyYAML 6.0.4 writes it (each key node merged once, the same on every
    PyYAML version), reading at most MAX_YAML_MERGED entries of merged mappings per load (_Refused past it)."""
    from yaml.constructor import ConstructorError
    from yaml.nodes import MappingNode, SequenceNode

    def take(source: Any) -> None:
        _flatten_mapping(self, source)
        self._merged = getattr(self, "_merged", 0) + len(source.value)
        if self._merged > MAX_YAML_MERGED:
            raise _Refused(f"YAML merge keys (<<) copy more than {MAX_YAML_MERGED:,} entries (merge expansion "
                           "attack?)")
        for pair in source.value:
            if (key_id := id(pair[0].value)) not in merge_key_ids:
                merge_key_ids.add(key_id)
                merge.append(pair)

    merge: list[Any] = []
    merge_key_ids: set[int] = set()  # anchor referent node objects should have reference equality here
    index = 0
    while index < len(node.value):
        key_node, value_node = node.value[index]
        if key_node.tag == "tag:yaml.org,2002:merge":
            del node.value[index]
            if isinstance(value_node, MappingNode):
                take(value_node)
            elif isinstance(value_node, SequenceNode):
                for subnode in value_node.value:
                    if not isinstance(subnode, MappingNode):
                        raise ConstructorError("while constructing a mapping", node.start_mark,
                                               f"expected a mapping for merging, but found {subnode.id}",
                                               subnode.start_mark)
                    take(subnode)
            else:
                raise ConstructorError("while constructing a mapping", node.start_mark,
                                       f"expected a mapping or list of mappings for merging, but found "
                                       f"{value_node.id}", value_node.start_mark)
        elif key_node.tag == "tag:yaml.org,2002:value":
            key_node.tag = "tag:yaml.org,2002:str"
            index += 1
        else:
            index += 1
    if merge:
        node.value = merge + node.value


@functools.cache
def reference_loader() -> type:
    """PyYAML's pure-Python SafeLoader (the reference on every machine) with nesting past MAX_YAML_DEPTH refused
    at a fixed depth (its recursion would otherwise stop wherever the caller's stack runs out), more than
    MAX_YAML_NODES nodes refused at the next one, merge keys bounded (``_flatten_mapping``)."""
    import yaml

    class ReferenceLoader(yaml.SafeLoader):  # type: ignore[misc]
        _depth = 0
        _nodes = 0
        flatten_mapping = _flatten_mapping

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    raise _Deep
                if not self.check_event(yaml.AliasEvent):
                    self._nodes += 1
                    if self._nodes > MAX_YAML_NODES:
                        raise _Many
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return ReferenceLoader


def fast_loader() -> type | None:
    """libyaml's CSafeLoader with the reference's merge keys (``_flatten_mapping``), or None without libyaml."""
    import yaml

    base = getattr(yaml, "CSafeLoader", None)
    return None if base is None else _fast_loader_on(base)


@functools.cache
def _fast_loader_on(base: type) -> type:
    return type("FastLoader", (base,), {"flatten_mapping": _flatten_mapping})


def _node_depth(root: Any) -> float:
    """Nodes on the longest path down a composed node graph (aliases followed, each node once); inf for a cycle.
    It bounds the document's syntactic nesting from above, which the reference loader's limit counts."""
    memo: dict[int, float] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        value = node.value
        if isinstance(value, str):
            memo[key] = 1
            continue
        kids = [n for pair in value for n in pair] if node.id == "mapping" else value
        if done:
            memo[key] = 1 + max((memo[id(k)] for k in kids), default=0)
        elif key in memo:
            if memo[key] < 0:
                return float("inf")  # reached again while its own subtree is open: a cycle
        else:
            memo[key] = -1
            stack.append((node, True))
            stack.extend((k, False) for k in kids if memo.get(id(k), 0) <= 0)
    return memo[id(root)]


def _few_nodes(loader_cls: type, text: str) -> bool:
    """Whether ``text`` holds at most MAX_YAML_NODES nodes in all its documents, counted on libyaml's events (a
    scalar or the start of a collection: what the reference loader counts), stopping past the limit (composing
    500,000 nodes took libyaml 1.4 s, its events up to the limit 0.04 s). Raises what libyaml raises."""
    import yaml

    kinds = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
    loader = loader_cls(text)
    try:
        nodes = 0
        while loader.check_event():
            if isinstance(loader.get_event(), kinds):
                nodes += 1
                if nodes > MAX_YAML_NODES:
                    return False
        return True
    finally:
        loader.dispose()


def _load_fast(loader_cls: type, text: str) -> list[Any] | None:
    """The documents as libyaml loads them, or None where the reference must decide (any error included)."""
    try:
        # a character makes at most 3 nodes ('?' alone is a mapping, its null key and null value): short text
        # needs no count; past the limit the reference refuses it at the same node (or fails it sooner)
        if 4 * len(text) > MAX_YAML_NODES and not _few_nodes(loader_cls, text):
            return None
        loader = loader_cls(text)
    except Exception:
        return None
    # each collection on a path down owns one of these characters (a flow one its '[' or '{', a block sequence
    # its '-', a block or single-pair mapping its ':' or '?'), so with few of them no node needs the walk
    walk = 1 + sum(text.count(c) for c in "[{-?:") > MAX_YAML_DEPTH
    try:
        docs = []
        while loader.check_node():
            node = loader.get_node()
            if walk and _node_depth(node) > MAX_YAML_DEPTH:
                return None
            docs.append(loader.construct_document(node))
        return docs
    except Exception:  # the verdict and the reason of every failure come from the reference
        return None
    finally:
        loader.dispose()


def load_reference(text: str) -> list[Any]:
    """Every document as the reference (pure-Python) loader reads it; _Refused past the depth limit, ValueError
    with the reference's reason for bad YAML."""
    import yaml

    try:
        return list(yaml.load_all(text, Loader=reference_loader()))
    except (_Deep, RecursionError):
        raise _Refused(f"YAML nests deeper than {MAX_YAML_DEPTH} levels") from None
    except _Many:
        raise _Refused(f"YAML of more than {MAX_YAML_NODES:,} nodes (too costly to judge)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}{where}") from None
    except (ValueError, OverflowError) as exc:  # e.g. "\U00110000" in the scanner, a bad date in the constructor
        raise ValueError(f"invalid YAML: {exc}") from None


def load_yaml(text: str) -> Any:
    """The one document of ``text`` as PyYAML's pure-Python SafeLoader reads it (the same on every machine), alias
    bombs, nesting past MAX_YAML_DEPTH, more than MAX_YAML_NODES nodes and merge keys copying more than
    MAX_YAML_MERGED entries refused (_Refused); ValueError for bad YAML or several documents.

    libyaml (``CSafeLoader``, where PyYAML has it) answers only where it cannot differ from the reference: text with
    none of the characters and constructs of ``libyaml_may_differ`` that it loads without an error, nested no deeper than
    the limit, of no more nodes than the limit. Everything else (every error, so every reason) is the reference's."""
    if "*" in text and len(_ALIAS.findall(text)) > MAX_YAML_ALIASES:
        raise _Refused(f"more than {MAX_YAML_ALIASES} YAML aliases (alias expansion attack?)")
    fast = fast_loader()
    docs = _load_fast(fast, text) if fast is not None and not libyaml_may_differ(text) else None
    if docs is None:
        docs = load_reference(text)
    if len(docs) != 1:
        raise ValueError(f"{len(docs)} YAML documents, expected one")
    return docs[0]


def _one_line_prose(body: str, value: Any) -> bool:
    """A sentence that YAML reads as a one-entry mapping or list: "Sure: I cannot do that.", "- I refuse."
    (one line, block style, one entry, its value a string of three or more words)."""
    if "\n" in body or body.lstrip()[:1] in ("{", "["):
        return False
    if isinstance(value, dict) and len(value) == 1:
        item = next(iter(value.values()))
    elif isinstance(value, list) and len(value) == 1:
        item = value[0]
    else:
        return False
    return isinstance(item, str) and len(item.split()) >= 3


class YamlValid(_MarkupBase):
    """The completion is one YAML document (safe_load: plain data only).

    answer: null, or the required top-level type as a JSON type name ("object" for a mapping, "array", ...).
    params: fenced ("allow": bare or one ```yaml block | "require" | "forbid"), think (True),
    plain_scalar (False: with no required type, a document that is a scalar fails, i.e. any prose, a number or
    an empty/null document ("---", "~"); so does one line of prose YAML reads as a one-entry mapping or list,
    "Sure: I cannot do that.", whatever the type; True accepts them).
    Invalid YAML, several documents or the wrong type fails; alias bombs, nesting deeper than MAX_YAML_DEPTH, more
    than MAX_YAML_NODES nodes, merge keys copying more than MAX_YAML_MERGED entries and a blank completion are
    malformed. The verdict is the pure-Python loader's on every machine (see load_yaml).
    """

    name = "yaml_valid"
    # 2: only libyaml's depth limit is "nests too deeply", not an error quoting "nesting depth"
    # 3: PyYAML's pure-Python loader is the reference on every machine (libyaml only where it cannot differ), every
    #    reason is its; nesting past MAX_YAML_DEPTH (100) is malformed (was libyaml's 1000 or the caller's stack)
    # 4: a fenced block followed by text is not one document (xml_valid 2 too); with no required type a scalar or
    #    null document fails; one line of prose read as a one-entry mapping or list ("Sure: I cannot.") fails
    # 5: more than MAX_YAML_NODES (20,000) nodes, or merge keys copying more than MAX_YAML_MERGED (100,000) entries,
    #    is malformed (1 MB of "[a,a,...]" took 8.6 s, 99 merges of one wide mapping 11 s, against a 10 s timeout)
    version = "5"
    description = "one safe YAML document (alias bombs and deep nesting refused), optional top-level type"
    langs = ("yaml", "yml", "")

    def __init__(self, *, plain_scalar: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.plain_scalar = bool(plain_scalar)

    def score(self, task: Task, completion: Completion) -> Verdict:
        want = task.answer
        if want is not None and want not in JSON_TYPES:
            raise BadTask(f"yaml_valid answer must be null or one of {', '.join(JSON_TYPES)}")
        body = self.text(completion)
        try:
            value = load_yaml(body)
        except _Refused as exc:
            raise Malformed(str(exc)) from None
        except ValueError as exc:
            return Verdict.ok(0.0, reason=str(exc))
        got = json_type(value) if isinstance(value, (dict, list, str, int, float, bool, type(None))) else "other"
        if want is None and got not in ("object", "array") and not self.plain_scalar:
            what = "a plain string (prose)" if got == "string" else f"a lone {got} ({clip(body, 20)!r})"
            return Verdict.ok(0.0, reason=f"the document is {what}, not structured YAML")
        if want in (None, "object", "array") and not self.plain_scalar and _one_line_prose(body, value):
            return Verdict.ok(0.0, reason="the document is one line of prose (one entry whose value is a sentence), "
                                          "not structured YAML")
        if want is not None and not (got == want or (want == "number" and got == "integer")):
            return Verdict.ok(0.0, reason=f"YAML {got}, expected {want}")
        return Verdict.ok(1.0, reason=f"valid YAML {got}")

    @classmethod
    def examples(cls) -> list[Example]:
        bomb = "a: &a [x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n"
                                           for i in range(20)) + "z: " + ", ".join(["*a"] * 100)
        return [
            cls.example("object", "```yaml\nname: Ada\nlanguages: [en, fr]\n```", "pass"),
            cls.example("object", "name: Ada\n  bad: indent: here", "fail", "invalid YAML"),
            cls.example(None, "Just some prose.", "fail", "prose is a YAML string"),
            cls.example(None, bomb, "malformed", "alias bomb refused"),
            cls.example(None, "", "malformed", "blank"),
        ]
