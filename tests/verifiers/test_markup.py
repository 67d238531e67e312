"""xml_valid and yaml_valid: well-formedness, attack documents refused, type checks."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.markup import XmlValid, YamlValid


def xml(text, answer=None, **params):
    return XmlValid(**params).verify(XmlValid.task(answer, params=params), Completion.from_text(text))


def yml(text, answer=None, **params):
    return YamlValid(**params).verify(YamlValid.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("text", [
    "<a/>", '<?xml version="1.0" encoding="UTF-8"?><a x="1"><b>t &amp; &lt;</b><!-- c --></a>',
    "```xml\n<root><item id='1'/></root>\n```", "<a><![CDATA[<not a tag>]]></a>", "<ns:a xmlns:ns='u'/>",
])
def test_xml_valid(text):
    assert xml(text).passed, text


@pytest.mark.parametrize("text", ["<a>", "<a></b>", "<a/><b/>", "plain text", "<a>&nbsp;</a>", "<a x=1/>"])
def test_xml_invalid(text):
    v = xml(text)
    assert not v.passed and v.error is None, v


@pytest.mark.parametrize("text", [
    '<!DOCTYPE a [<!ENTITY x "xxxxxxxx"><!ENTITY y "&x;&x;&x;&x;">]><a>&y;</a>',
    '<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>',
    '<!DOCTYPE a [<!ENTITY ext SYSTEM "file:///etc/passwd">]><a>&ext;</a>',
    "",
])
def test_xml_attacks_and_blank_are_malformed(text):
    assert xml(text).error_kind == "malformed"


def test_xml_root_and_params():
    assert xml("<note/>", "note").passed
    assert not xml("<memo/>", "note").passed
    assert not xml("Here: ```xml\n<a/>\n```", fenced="forbid").passed
    assert xml("<a/>", 5).error_kind == "exception"
    with pytest.raises(VerifierError):
        XmlValid(fenced="sometimes")


@pytest.mark.parametrize("text,kind", [
    ("a: 1\nb: [x, y]", "object"), ("- 1\n- 2", "array"), ("```yaml\nkey: value\n```", "object"),
    ("---\nname: Ada\n...", "object"), ("a: &x 1\nb: *x", "object"), ("3", "integer"),
])
def test_yaml_valid(text, kind):
    assert yml(text).passed if kind != "integer" else yml(text, "integer").passed
    assert yml(text, kind).passed


@pytest.mark.parametrize("text", [
    "a: 1\n  b: 2: 3", "key: [unclosed", "a: 1\n---\nb: 2", "Just prose.", "!!python/object/apply:os.system ['ls']",
    "a: !!python/name:os.system",
])
def test_yaml_invalid(text):
    v = yml(text)
    assert not v.passed and v.error is None, v


def test_yaml_attacks_and_options():
    bomb = "a: &a [x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n"
                                       for i in range(20)) + "z: " + ", ".join(["*a"] * 100)
    assert yml(bomb).error_kind == "malformed"
    assert yml("[" * 5000 + "]" * 5000).error_kind == "malformed"
    assert yml("").error_kind == "malformed"
    assert yml("Just prose.", plain_scalar=True).passed
    assert not yml("a: 1", "array").passed
    assert yml("a: 1", "mapping").error_kind == "exception"


def test_an_error_quoting_nesting_depth_fails_on_either_yaml_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """yaml_valid took "nesting depth" anywhere in str(exc) for the depth limit, and PyYAML's own loader (where
    libyaml is missing) quotes the document there: invalid YAML holding those words was malformed there and a
    fail with libyaml. Both loaders now fail it; libyaml's real depth limit is still malformed."""
    import yaml

    text = 'key: "nesting depth" : x'
    assert yml(text).error is None and yml(text).reward == 0.0
    assert yml("[" * 2000 + "]" * 2000).error_kind == "malformed"
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)  # the pure-Python loader, as without libyaml
    v = yml(text)
    assert (v.reward, v.passed, v.error) == (0.0, False, None), v


# Inputs on which libyaml and PyYAML's pure-Python loader disagree (verdict or type), one or more per class found by
# the differential run (bench/yaml_valid.py); yaml_valid must judge each the same with and without libyaml.
KNOWN_DIVERGENT = [
    "a:\tb", "a: b\t", "a:\t\n  b: 1", "[a,\tb]", "a: [1,\t2]", "a: {b:\t1}", "a:  \t  b", "---\t\n---",  # tabs
    '"\\uD800"', '"\\U00110000"', 'q: "\\ud83d\\ude00"',  # double-quoted escapes: surrogates, past U+10FFFF
    "a: 1\n\ufeffb: 2", "---\n\ufeff\na: 1", "---\n\ufeff&a {k: *a}",  # a BOM past the start
    "%YAML 1.3\n---\na", "%FOO bar\n---\n[x]",  # directives
    "!", "--- !", "! ", "a: !\nb: !",  # the non-specific tag on an empty node
    "run: [No?~, 1e3]", "path: [a: b?0x1F]",  # '?' inside a flow plain scalar
    "password: >#  # c\nimage: x\n", "a: |-#\n  x",  # a block scalar header followed by '#'
    "[" * 500 + "]" * 500, "{a: " * 700 + "x" + "}" * 700, "- " * 600 + "x",  # nesting between the limits
]


def _verdicts(texts, **params):
    v, task = YamlValid(**params), YamlValid.task(None, params=params)
    return [(r.reward, r.passed, r.error_kind, r.reason) for r in (v.verify(task, Completion.from_text(t))
                                                                     for t in texts)]


def _both_ways(texts, monkeypatch):
    import yaml

    with_c = _verdicts(texts)
    with monkeypatch.context() as m:
        m.delattr(yaml, "CSafeLoader", raising=False)  # as PyYAML built without libyaml
        without = _verdicts(texts)
    return with_c, without


def test_yaml_known_divergent_inputs_judged_alike_with_and_without_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from crossgym.verifiers.markup import reference_loader

    def raw(text, loader):
        try:
            return [type(d).__name__ for d in yaml.load_all(text, Loader=loader)]
        except Exception as exc:  # noqa: BLE001 - any failure is one outcome here
            return type(exc).__name__

    if hasattr(yaml, "CSafeLoader"):  # the inputs are real divergences of the two loaders as installed
        differ = [t for t in KNOWN_DIVERGENT if raw(t, yaml.CSafeLoader) != raw(t, yaml.SafeLoader)]
        assert len(differ) >= len(KNOWN_DIVERGENT) // 2, differ
    with_c, without = _both_ways(KNOWN_DIVERGENT, monkeypatch)
    for text, a, b in zip(KNOWN_DIVERGENT, with_c, without, strict=True):
        assert a == b, (text[:40], a, b)
    # the reference decides: pure refuses a tab after ':', takes a BOM mid-text
    assert with_c[0][:3] == (0.0, False, None) and "cannot start any token" in with_c[0][3]
    assert with_c[KNOWN_DIVERGENT.index("a: 1\n\ufeffb: 2")][1]
    assert all(v[2] == "malformed" and "deeper than 100" in v[3] for v in with_c[-3:])
    assert issubclass(reference_loader(), yaml.SafeLoader)


def test_yaml_seeded_differential_with_and_without_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 seeded YAML-like texts (tests/verifiers/yaml_texts.py: tabs, indentation, flow/block mixes,
    anchors/aliases, tags, several documents, BOMs, control characters, escapes, directives, deep nesting, long
    lines): every verdict, reason included, is the same with libyaml and with it forced off."""
    from yaml_texts import documents

    texts = documents(2026, 600)
    with_c, without = _both_ways(texts, monkeypatch)
    diffs = [(t[:60], a, b) for t, a, b in zip(texts, with_c, without, strict=True) if a != b]
    assert not diffs, diffs[:5]
    kinds = {(v[1], v[2]) for v in with_c}
    assert {(True, None), (False, None), (False, "malformed")} <= kinds  # passes, fails and refusals all seen


@pytest.mark.parametrize("text,kind", [
    ("[" * 99 + "x" + "]" * 99, None), ("[" * 100 + "x" + "]" * 100, "malformed"),
    ("[" * 100 + "]" * 100, None), ("[" * 101 + "]" * 101, "malformed"),
    ("{a: [" + "[" * 100 + "]" * 100 + "], a: 1}", "malformed"),  # a duplicate key drops the deep value
    ("a: &x [1, *x]", None), ("&a {k: *a}", None),  # a cycle through an alias
    ("a: &a " + "[" * 98 + "]" * 98 + "\nb: [*a]\nc: {d: *a}", None),  # aliases do not add syntactic depth
])
def test_yaml_depth_limit_is_the_same_on_both_loaders(text, kind, monkeypatch: pytest.MonkeyPatch) -> None:
    with_c, without = _both_ways([text], monkeypatch)
    assert with_c == without
    assert with_c[0][2] == kind, with_c[0]


@pytest.mark.parametrize("text,answer", [
    ("Sure: I cannot produce that YAML right now.", None), ("Sure: I cannot produce that YAML right now.", "object"),
    ("- I refuse to answer", "array"), ("---", None), ("~", None), ("42", None),
    ("```yaml\nname: Ada\n```\nHope this helps!", "object"), ("```yaml\nname: [\n```\n```yaml\nname: Ada\n```", "object"),
])
def test_yaml_prose_vacuous_documents_and_text_after_a_block_fail(text, answer):
    """A sentence with a colon is a one-entry mapping, "- I refuse" a list, "---" a null document: each passed."""
    v = yml(text, answer)
    assert v.reward == 0.0 and v.error is None, v
    assert yml("name: Ada\nlanguages: [en, fr]", answer if answer != "array" else None).reward == 1.0
    assert yml("- a\n- b", "array").reward == 1.0 and yml("```yaml\nname: Ada\n```", "object").reward == 1.0
    assert yml("42", None, plain_scalar=True).reward == 1.0


@pytest.mark.parametrize("text", ["```xml\n<note/>\n```\nAnd here is some text that is not XML <<<",
                                  "```xml\n<note><bad></note>\n```\n```xml\n<note/>\n```",
                                  "Here it is:\n```xml\n<note/>\n```"])
def test_xml_allow_reads_the_whole_reply_or_one_whole_block(text):
    """The last block was judged alone: text after it, and a broken block before it, were never read."""
    v = xml(text, "note")
    assert v.reward == 0.0, v
    assert xml("```xml\n<note/>\n```", "note").reward == 1.0
    assert xml(text.replace("<note><bad></note>", "<x/>"), "note", fenced="require").reward == 1.0


@pytest.mark.parametrize("encoding", ["bogus", "hex", "rot13", "zlib", "mbcs"])
def test_a_declared_encoding_that_cannot_be_read_fails_the_document(encoding):
    """pyexpat's LookupError escaped: the completion got an exception verdict (the infrastructure's fault, masked
    in training) where its crossed tags deserve a plain 0."""
    v = xml(f'<?xml version="1.0" encoding="{encoding}"?><a><b></a>')
    assert not v.passed and v.error is None, v


def test_yaml_of_too_many_nodes_is_malformed_with_and_without_libyaml(monkeypatch):
    """PyYAML's pure-Python loader spends 17-40 µs a node: 1 MB of "[a,a,...]" took 8.6 s against the 10 s
    timeout. Past MAX_YAML_NODES the document is malformed, at the same node with libyaml or without."""
    from crossgym.verifiers import markup

    cap = markup.MAX_YAML_NODES
    v = yml("items: [" + "a," * cap + "a]")
    assert v.error_kind == "malformed" and f"{cap:,} nodes" in v.reason, v
    monkeypatch.setattr(markup, "MAX_YAML_NODES", 300)  # the same code paths, sooner
    texts = ["items: [" + "a," * 300 + "a]", "- a\n" * 301, "x: \\\nitems: [" + "a," * 300 + "a]",
             "a\n---\n" * 301, "{" + ", ".join(f"k{i}: v" for i in range(150)) + "}"]
    with_c, without = _both_ways(texts, monkeypatch)
    assert with_c == without
    assert all(v[2] == "malformed" and "300 nodes" in v[3] for v in with_c), with_c
    fits = ["items: [" + "a," * 296 + "a]", "{" + ", ".join(f"k{i}: v" for i in range(149)) + "}"]
    assert _both_ways(fits, monkeypatch) == ([(1.0, True, None, "valid YAML object")] * 2,) * 2


def test_yaml_merge_keys_copying_too_many_entries_are_malformed(monkeypatch):
    """Each merge (<<: *a) copies the merged mapping's entries again: 99 merges of one 75,000-entry mapping took
    11 s."""
    wide = "a: &a {" + ", ".join(f"k{i}: 1" for i in range(2000)) + "}\n"
    bomb = wide + "".join(f"b{j}: {{<<: *a, x: 1}}\n" for j in range(60))
    with_c, without = _both_ways([bomb, "x: \\\n" + bomb], monkeypatch)
    assert with_c == without
    assert all(v[2] == "malformed" and "merge keys" in v[3] for v in with_c), with_c
    honest = "defaults: &d {image: app, restart: always}\nweb: {<<: *d, port: 80}\ndb:\n  <<: [*d]\n  port: 5432\n"
    assert yml(honest, "object").passed


def _merge_before_6_0_4(self, node):
    """SafeConstructor.flatten_mapping as PyYAML 6.0.3 and before write it: the copies of copies are kept."""
    from yaml.nodes import MappingNode, SequenceNode

    merge, index = [], 0
    while index < len(node.value):
        key_node, value_node = node.value[index]
        if key_node.tag == "tag:yaml.org,2002:merge":
            del node.value[index]
            subs = [value_node] if isinstance(value_node, MappingNode) else value_node.value
            assert isinstance(value_node, (MappingNode, SequenceNode))
            for sub in subs:
                self.flatten_mapping(sub)
            for sub in reversed(subs):
                merge.extend(sub.value)
        else:
            index += 1
    if merge:
        node.value = merge + node.value


def test_yaml_merge_chains_stay_small_on_every_pyyaml(monkeypatch):
    """PyYAML>=6 allows 6.0.0-6.0.3, whose merges keep the copies of copies: a chain where each mapping merges the
    one before three times grows 3x a level (526 characters: 30 s on 6.0.3). crossgym's loaders merge as 6.0.4 does
    (each key node once) whatever PyYAML is installed."""
    import time

    import yaml

    monkeypatch.setattr(yaml.constructor.SafeConstructor, "flatten_mapping", _merge_before_6_0_4)
    chain = "a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}, *a{i - 1}], x{i}: 1}}\n"
                                         for i in range(1, 15))
    t0 = time.monotonic()
    with_c, without = _both_ways([chain, "x: \\\n" + chain], monkeypatch)
    assert with_c == without == [(1.0, True, None, "valid YAML object")] * 2
    assert time.monotonic() - t0 < 1.0
