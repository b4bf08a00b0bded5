"""A YAML reader with bounded work: configs from hostile or careless hands are refused in one line.

:func:`safe_load` is PyYAML's ``SafeLoader`` (no tags that build Python objects) with four more
refusals, all made before anything is validated or merged:

- **size**: more than :data:`MAX_NODES` values, counted as they are composed (a 4 MB flow list was
  composed whole, a minute's work, before its size was checked), and files past :data:`MAX_BYTES`
  (``isotropy.experiments._config.load_yaml``);
- **aliases that expand** past :data:`MAX_NODES` nodes (the "billion laughs": a few hundred bytes of
  nested aliases that stand for billions of values), and recursive aliases (``&a [*a]``); the size
  is counted on the composed node graph, aliases expanded, before any value is built;
- **nesting** deeper than :data:`MAX_DEPTH` (PyYAML's composer recurses: 20,000 nested ``[`` were a
  ``RecursionError``);
- **duplicate keys** in a mapping (PyYAML lets the last one win silently; merge keys ``<<`` may
  still be overridden, as YAML says);
- **non-finite numbers** (``1e400``, ``.inf``, ``.nan``): a config number is meant to be finite;
- **YAML 1.1 numbers that read as something else**: a leading zero (``017``, octal 15 under YAML 1.1,
  17 under YAML 1.2) and colons (``1:30``, base 60: 90); quoted, they are text.

Tags that construct Python objects (``!!python/object/apply:os.system [...]``) are refused as
``SafeLoader`` refuses them (nothing is constructed, no code runs), but by their own
:class:`PythonTagError`, which names the tag: the document is valid YAML, refused by design.

It also reads ``1e-3`` and ``5E+2`` as floats (YAML 1.1 wants a dot, ``1.0e-3``, and reads them as
strings otherwise). Every refusal is a :class:`UnsafeYAMLError`, a ``yaml.YAMLError`` with a
``problem`` and a ``problem_mark`` (line and column), so a caller catching ``yaml.YAMLError`` reports
it like any syntax error. Messages quote at most :data:`EXCERPT` characters of a value.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode

__all__ = ["EXCERPT", "MAX_DEPTH", "MAX_NODES", "PYTHON_TAG_REFUSAL", "PythonTagError", "UnsafeYAMLError", "safe_load"]

MAX_NODES = 100_000  # values in the document once every alias is expanded
MAX_BYTES = 2**20  # a config file: the packaged ones are a few kilobytes
MAX_DEPTH = 64  # nested sequences and mappings
EXCERPT = 40  # characters of a value quoted in a message
# why a !!python/... tag is refused: the one wording, in this module's message and in the config's
PYTHON_TAG_REFUSAL = ("tags that construct Python objects are refused by design (a safe loader: a config runs "
                      "no code)")

_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class UnsafeYAMLError(ConstructorError):
    """A YAML document refused before it is used: too large once expanded, too deep, a duplicate key, a non-finite number."""

    def __init__(self, problem: str, mark=None):
        super().__init__(problem=problem, problem_mark=mark)


class PythonTagError(UnsafeYAMLError):
    """A ``!!python/...`` tag: valid YAML that would construct a Python object, refused by design (a safe loader).

    ``tag`` is the tag as written in the document (an excerpt of it), e.g. ``'!!python/object/apply:os.system'``.
    """

    def __init__(self, tag: str, mark=None):
        self.tag = excerpt(tag)
        super().__init__(f"the tag {self.tag} constructs a Python object; {PYTHON_TAG_REFUSAL}", mark)


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``repr`` of at most ``limit`` characters of ``text`` (``...`` marks a cut)."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


class _Loader(yaml.SafeLoader):
    """SafeLoader with the bounds of the module docstring."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._composed = 0

    # -- composition: depth, then the expanded size of the whole document
    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise UnsafeYAMLError(f"nesting deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            self._composed += 1  # an alias counts once here; its expansion is counted in compose_document
            if self._composed > MAX_NODES:
                raise UnsafeYAMLError(f"more than {MAX_NODES:,} values; expected a config", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _check_expanded_size(node)
        return node

    # -- construction: duplicate keys, non-finite numbers, anything else one line
    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = self.construct_object(key_node, deep=True)
                    hash(key)
                except (TypeError, RecursionError):
                    continue  # an unhashable key: SafeLoader's own error says so
                if key in seen:
                    raise UnsafeYAMLError(f"duplicate key {excerpt(key)} (first on line {seen[key] + 1}); "
                                          f"each key may appear once in a mapping", key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node):
        _refuse_yaml11_number(node)
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise UnsafeYAMLError(f"the number {excerpt(node.value)} is not finite; expected a finite number",
                                  node.start_mark)
        return value

    def construct_yaml_int(self, node):
        _refuse_yaml11_number(node)
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            import sys

            digits = sum(c.isdigit() for c in str(node.value))
            raise UnsafeYAMLError(f"the integer {excerpt(node.value)} has too many digits: {digits:,}, where "
                                  f"Python converts at most {sys.get_int_max_str_digits():,}", node.start_mark) from None


# YAML 1.1 forms read as numbers that YAML 1.2 and a reader expect otherwise: a leading zero is octal (seeds=[017]
# read as 15) and colons are base 60 (lr=1:30 read as 90.0)
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
_BASE_60 = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")


def _refuse_yaml11_number(node) -> None:
    """Refuse the numbers of YAML 1.1 that are read otherwise by YAML 1.2 and by a reader (``017``, ``1:30``)."""
    text = str(node.value).replace("_", "") if isinstance(node.value, str) else ""
    if _OCTAL.match(str(node.value)) and text.lstrip("+-") != "0" * len(text.lstrip("+-")):
        raise UnsafeYAMLError(f"the number {excerpt(node.value)} has a leading zero, which YAML 1.1 reads as octal "
                              f"({int(text, 8)}) and YAML 1.2 as decimal; write it without the zero, or quote it "
                              f"for text", node.start_mark)
    if _BASE_60.match(str(node.value)):
        sign, digits = (-1 if text.startswith("-") else 1), text.lstrip("+-").split(":")
        value = sign * sum(float(part) * 60 ** power for power, part in enumerate(reversed(digits)))
        raise UnsafeYAMLError(f"the value {excerpt(node.value)} is a base-60 number under YAML 1.1 ({value:g}); "
                              f"write the number itself, or quote it for text", node.start_mark)


def _refuse_python_tag(loader, suffix, node):
    raise PythonTagError(f"!!python/{suffix}", node.start_mark)


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _refuse_python_tag)  # before SafeLoader's "unknown tag"
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def _check_expanded_size(root) -> None:
    """Refuse a node graph that stands for more than MAX_NODES values, or holds a cycle (iterative: no recursion)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                raise UnsafeYAMLError(f"the document expands to more than {MAX_NODES:,} values through its aliases "
                                      f"(a 'billion laughs'?); expected a config without nested aliases",
                                      node.start_mark)
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise UnsafeYAMLError("a recursive alias (a value that contains itself)", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise UnsafeYAMLError("a recursive alias (a value that contains itself)", child.start_mark)
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node) -> list:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def safe_load(text: str) -> Any:
    """Parse one YAML document with the bounds of the module docstring; :class:`UnsafeYAMLError` when refused.

    Other problems raise PyYAML's own ``yaml.YAMLError`` (syntax, unknown tags); nothing else escapes.
    """
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        raise
    except RecursionError:
        raise UnsafeYAMLError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise UnsafeYAMLError(f"a value cannot be read ({excerpt(exc, 80)})") from None
