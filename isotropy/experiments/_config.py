"""Experiment configs: packaged YAML defaults, then the user's partial YAML, then ``--set``; checked by pydantic.

Why pydantic v2 models (and not hand-written key walking, or OmegaConf): a config is a typed,
range-checked record. A model declares each key once with its type and bounds
(``lr: float = Field(gt=0)``), rejects unknown keys (``extra="forbid"``) at every depth of nesting,
and reports every failure with the key's full path, the offending value and what was expected;
``strict=True`` refuses silent coercions (``"0.01"`` is not a number, ``true`` is not an int).
OmegaConf would merge the files just as well, but its checks stop at types: ranges and choices
would be hand-written again beside it.

The merge, in order (each layer may be partial):

1. the packaged defaults ``isotropy/configs/<experiment>/<default setup>.yaml``;
2. the setup: a packaged name (``--setup paper``) or the user's YAML file (``--setup my.yaml``),
   merged key by key over the defaults (nested mappings merge recursively, other values replace);
3. ``--set KEY=VALUE`` overrides (dotted keys reach nested values; values are parsed as YAML, and
   numbers such as ``1e-3``, which YAML 1.1 reads as strings, are floats).

Every failure is a :class:`ConfigError` (a ``ValueError``) with a one-line message; the command
line prints it as ``Error: ...`` with exit status 2.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from isotropy._utils.suggest import did_you_mean
from isotropy._utils.validation import MAX_INT, _describe

__all__ = [
    "CONFIG_ROOT",
    "MAX_INT",
    "MAX_SEED",
    "ConfigError",
    "ExperimentConfig",
    "OverridesOf",
    "Seeds",
    "available_setups",
    "bool_words",
    "config_hash",
    "config_rule",
    "dotted_keys",
    "dump_config",
    "expects",
    "load_yaml",
    "merge",
    "own_values",
    "parse_set_options",
    "parse_yaml_value",
    "resolve_config",
    "resolve_values",
    "setup_path",
]

CONFIG_ROOT = Path(__file__).resolve().parent.parent / "configs"
# command-line flags that are not config keys: a YAML or --set naming them gets a pointer to the flag
_CONTEXT_KEYS = {"device": "--device", "threads": "--threads", "num_threads": "--threads",
                 "results_dir": "--results-dir", "data_dir": "--data-dir", "resume": "--resume",
                 "experiment": "isotropy run EXPERIMENT"}
# the key a saved config.yaml (and --print-config) names its experiment with; not a config key: checked on load
EXPERIMENT_KEY = "experiment"


class ConfigError(ValueError):
    """A config that cannot be used: unreadable YAML, an unknown key, a value of the wrong type or range."""


# The largest int a config key takes unless its field declares its own upper bound (a seed: MAX_SEED). Every int of
# a config counts something a run does or holds (updates, epochs, steps, samples, items, tokens, clusters, components,
# batch sizes, layer indices): a billion of any of them is far past any real run (the paper setups ask for at most
# ~10**5), yet keeps the work a config may ask for bounded. Without it `updates: 9999999999999999999999` was an
# OverflowError traceback (range() of it in classifier-geometry) and `updates: 10**18` was accepted. One constant with
# the library's counts (isotropy measure): isotropy._utils.validation.MAX_INT.
_WHY_MAX_INT = "a bound far past any real run, which keeps the work a config may ask for bounded"


_GIVEN = "_given_keys"  # the attribute of ExperimentConfig.set_given


class ExperimentConfig(BaseModel):
    """Base of every experiment's config model: strict types, unknown keys refused, checked on assignment.

    Every int of every key (also an item of a list of ints) lies in ``[-MAX_INT, MAX_INT]`` unless the
    field declares its own upper bound (:data:`Seeds`): :meth:`_bounded_ints`, one check for every experiment.
    """

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True)

    def was_given(self, key: str) -> bool:
        """Whether the user gave the dotted ``key`` (``max_length``, ``embeddings.max_length``) themselves.

        The keys of the keyword overrides, ``--set`` and the user's own partial YAML file, recorded by
        ``Experiment.config`` (:meth:`set_given`): a check against the loaded model refuses a value the
        user chose, and leaves a packaged default to its fallback. ``False`` for a config made otherwise.
        """
        return key in self.__dict__.get(_GIVEN, ())

    def set_given(self, keys) -> None:
        """Record the dotted keys the user gave (see :meth:`was_given`). Kept beside the fields, not as a pydantic
        private attribute: a config equals another of the same values however it was made, and copies keep it."""
        object.__setattr__(self, _GIVEN, frozenset(keys))

    @field_validator("*", mode="before")
    @classmethod
    def _bounded_ints(cls, value, info: ValidationInfo):
        """Refuse an int past :data:`MAX_INT` (in size) in a key whose type takes ints, naming the range it may take."""
        field = cls.model_fields.get(info.field_name) if info.field_name else None
        if field is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            bounds = _int_bounds(field.annotation, field.metadata)
            if bounds is not None and not -MAX_INT <= value <= MAX_INT:
                raise config_rule(f"must be an int in [{bounds[0]}, {bounds[1]}] ({_WHY_MAX_INT})")
        elif isinstance(value, list) and len(value) <= 100_000:
            bounds = _int_bounds(field.annotation, field.metadata, item=True)
            if bounds is not None:
                for index, item in enumerate(value):
                    if isinstance(item, int) and not isinstance(item, bool) and not -MAX_INT <= item <= MAX_INT:
                        raise config_rule(f"must hold ints in [{bounds[0]}, {bounds[1]}] ({_WHY_MAX_INT}); its item "
                                          f"[{index}] is {_shown(item, 40)}")
        return value

    @model_validator(mode="after")
    def _overrides(self):
        """Check each key holding overrides of another config (:class:`OverridesOf`) with the values they override."""
        for name, field in type(self).model_fields.items():
            marker = _overrides_of(field)
            if marker is not None:
                marker.check(self, name)
        return self

    @classmethod
    def hashed_values(cls, values: dict) -> dict:
        """The values a run's config hash is taken of (:func:`config_hash`): ``values`` as they are.

        An experiment whose key changed its default overrides this to map the new default back to
        the old one, so that runs saved before the change keep their hash (and resume).
        """
        return values


class OverridesOf:
    """Marks a mapping key of a config that holds overrides of another config: ``Annotated[dict[str, Any], OverridesOf(...)]``.

    activation-diagrams' ``fine_tune`` overrides the istar setup named by its ``fine_tune_setup``. The
    mapping is checked with the config itself, so ``--print-config`` refuses what the run would
    refuse: ``values(config)`` gives the other config's values with the overrides merged in
    (:func:`resolve_values`), which ``model`` validates. A wrong override is said as a key of this
    config (``fine_tune.lr``), with the messages of every other section (unknown keys with the
    closest one, types, ranges); a :class:`ConfigError` of ``values`` (the setup named cannot be
    read) is said as one of the key ``source``. ``exclude``: keys of ``model`` set elsewhere in this
    config (left out of the keys an unknown one is matched against).
    """

    def __init__(self, model: type[BaseModel], values, *, source: str, exclude=()):
        self.model = model
        self.values = values
        self.source = source
        self.exclude = frozenset(exclude)

    def check(self, config: BaseModel, name: str) -> None:
        """Raise the ``ValidationError`` of ``config``'s key ``name`` (its errors located under ``name``), if any."""
        from pydantic_core import InitErrorDetails

        try:
            values = self.values(config)
        except ConfigError as exc:
            why = str(exc).rstrip(".")
            why = why[:1].lower() + why[1:] if why.startswith("The ") else why
            detail = InitErrorDetails(type=config_rule(f"names settings that cannot be used ({why})"),
                                      loc=(self.source,), input=getattr(config, self.source))
            raise ValidationError.from_exception_data(type(config).__name__, [detail]) from None
        _wrapper(self.model, name).model_validate({name: values})


@functools.cache
def _wrapper(model: type[BaseModel], name: str) -> type[BaseModel]:
    """A model of the one key ``name`` holding ``model``: its errors are located under ``name``, as a section's are."""
    from pydantic import create_model

    return create_model(f"{model.__name__}Overrides", **{name: (model, ...)})


def _overrides_of(field) -> OverridesOf | None:
    return next((m for m in getattr(field, "metadata", None) or () if isinstance(m, OverridesOf)), None)


def _int_bounds(annotation, metadata=(), *, item: bool = False) -> tuple[int, int] | None:
    """The range ``[low, MAX_INT]`` an int of a field's value is held to (``item``: an int inside a list of them).

    ``None`` when the field takes no such int (a str, a float, a section) or declares its own upper bound (``le``/
    ``lt``: seeds). ``low`` is the field's ``ge``/``gt`` where it declares one, else ``-MAX_INT``.
    """
    import types
    import typing

    def walk(tp, meta, in_list):
        """(declared lower bound or None, declared upper bound?) of each int the type ``tp`` takes."""
        origin = typing.get_origin(tp)
        if origin is Annotated:
            base, *more = typing.get_args(tp)
            extra = []
            for m in more:
                extra.extend(getattr(m, "metadata", None) or [m])
            yield from walk(base, [*meta, *extra], in_list)
        elif origin in (typing.Union, types.UnionType):
            for member in typing.get_args(tp):
                yield from walk(member, meta, in_list)
        elif origin is list:
            args = typing.get_args(tp)
            if args:
                yield from walk(args[0], [], True)
        elif tp is int and in_list == item:
            low = next((getattr(m, "ge", None) for m in meta if getattr(m, "ge", None) is not None), None)
            if low is None:
                gt = next((getattr(m, "gt", None) for m in meta if getattr(m, "gt", None) is not None), None)
                low = None if gt is None else gt + 1
            capped = any(getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in meta)
            yield low, capped

    found = list(walk(annotation, list(metadata), False))
    if not found or any(capped for _, capped in found):
        return None
    lows = [low for low, _ in found if low is not None]
    low = max(min(lows), -MAX_INT) if lows and len(lows) == len(found) else -MAX_INT
    return low, MAX_INT


def expects(text: str, *, choices=None, **kwargs):
    """``Field(...)`` whose error messages say ``must be <text>`` (for unions and lists).

    ``choices``: names a misspelt value is matched against, for the message's "Did you mean ...?".
    """
    extra = {"expected": text} if choices is None else {"expected": text, "choices": list(choices)}
    return Field(json_schema_extra=extra, **kwargs)


def config_rule(text: str):
    """A validator's refusal of a value that breaks a rule between keys, worded whole (not "must be ...").

    Raised from a validator; said as "The 'KEY' setting of EXPERIMENT <text>. Got VALUE instead."
    """
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("config_rule", text.replace("{", "{{").replace("}", "}}"))


def _distinct(values: list) -> list:
    if len(set(values)) != len(values):
        raise ValueError("distinct")
    return values


# A seed is below 2**32: the generators an experiment seeds take it (scikit-learn's random_state is numpy's RandomState,
# which refuses 2**32 and above; torch.manual_seed refused 1e20 after the model had loaded, in words naming neither
# the key nor the limit: "Overflow when unpacking long long").
MAX_SEED = 2**32 - 1
Seeds = Annotated[list[Annotated[int, Field(ge=0, le=MAX_SEED)]],
                  expects(f"a non-empty list of distinct ints in [0, {MAX_SEED}] such as [0, 1, 2]",
                          min_length=1), AfterValidator(_distinct)]


# ---------------------------------------------------------------- YAML
def table_words(exc: ValueError, *, experiment: str, prefix: str = "") -> ValueError:
    """``exc`` of :func:`isotropy.datasets.tables.load_table` in an experiment's words: its column parameter is the
    config value that gave it (``prefix``: the section, ``"table."``), set with ``--set`` (the run printed "The
    'text_column' parameter of load_table ...", a Python name no option has, a user trial). Other errors as they are.
    """
    match = re.match(r"The '(\w+)' parameter of load_table (.*)", str(exc))
    if match is None:
        return exc
    key = prefix + match.group(1)
    return type(exc)(f"The '{key}' setting of {experiment} {match.group(2)} Set it with --set {key}=NAME.")


def parse_yaml_value(text: str, *, where: str) -> Any:
    """Parse one YAML scalar or flow value (``3e-5``, ``null``, ``[1, 2]``); one-line error naming ``where``."""
    import yaml

    from isotropy.experiments._yaml import PythonTagError, UnsafeYAMLError, safe_load

    try:
        return safe_load(text)  # bounded: aliases, depth, duplicate keys, non-finite numbers
    except PythonTagError as exc:
        raise ConfigError(f"{where}: {_shown(text)} {_python_tag_refusal(exc)}.") from None
    except UnsafeYAMLError as exc:  # valid YAML refused by design ('.inf' is a YAML float): not a syntax error
        raise ConfigError(f"{where}: {_shown(text)} is refused ({_yaml_reason(exc)}).") from None
    except yaml.YAMLError as exc:  # the value shortened: a 5,000-digit int was echoed whole
        raise ConfigError(f"{where}: {_shown(text)} is not a valid YAML value ({_yaml_reason(exc)}).") from None


def _python_tag_refusal(exc) -> str:
    """``uses the tag ... at line L, column C, which ...``: valid YAML refused by design, not a syntax error."""
    from isotropy.experiments._yaml import PYTHON_TAG_REFUSAL

    mark = exc.problem_mark
    return (f"uses the tag {exc.tag} at line {mark.line + 1}, column {mark.column + 1}, which constructs a Python "
            f"object: {PYTHON_TAG_REFUSAL}")


def _yaml_reason(exc) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    if context and getattr(exc, "problem", None):  # "but found another document" said nothing without its context
        problem = f"{context}, {problem}"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())


def load_yaml(path: str | Path, *, name: str = "config file") -> dict:
    """Read a YAML mapping from ``path``; every problem (missing, malformed, empty, not a mapping, tags) is one line."""
    import yaml

    from isotropy.experiments._files import read_text
    from isotropy.experiments._yaml import MAX_BYTES, PythonTagError, safe_load

    path = Path(path)
    try:  # a regular file of at most MAX_BYTES: a FIFO is refused before it is opened, /dev/zero is not read
        text = read_text(path, what=name, expected="a config file (a few kilobytes of YAML)", limit=MAX_BYTES,
                         error=ConfigError)
    except FileNotFoundError:
        raise ConfigError(f"The {name} {str(path)!r} does not exist.") from None
    try:
        data = safe_load(text)
    except PythonTagError as exc:
        raise ConfigError(f"The {name} {str(path)!r} {_python_tag_refusal(exc)}.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"The {name} {str(path)!r} is not valid YAML: {_yaml_reason(exc)}.") from None
    if data is None:  # an empty (or comments-only) file, or one holding null itself
        empty = all(not line.strip() or line.lstrip().startswith(("#", "---", "...")) for line in text.splitlines())
        what = "is empty" if empty else "holds null at the top level"
        raise ConfigError(f"The {name} {str(path)!r} {what}; expected a mapping of config keys to values.")
    if not isinstance(data, dict):
        raise ConfigError(f"The {name} {str(path)!r} holds a {type(data).__name__} at the top level; "
                          f"expected a mapping of config keys to values.")
    bad = _non_text_key(data)
    if bad is not None:  # pydantic said "The 'config' setting ... must be Keys should be strings. Got 1 instead."
        where, key = bad
        inside = f" under '{where}'" if where else ""
        kind = ("null" if key is None else "a boolean" if isinstance(key, bool) else
                "a number" if isinstance(key, (int, float)) else f"a {type(key).__name__}")
        raise ConfigError(f"The {name} {str(path)!r} has the key {_shown(key)}{inside}, which YAML reads as {kind}; "
                          f"expected config keys, which are names such as lr (quote a key meant as a name).")
    return data


def _non_text_key(data: dict, where: str = "") -> tuple[str, Any] | None:
    """(the dotted place, the key) of the first key of ``data`` (at any depth) that is not text; None if none."""
    for key, value in data.items():
        if not isinstance(key, str):
            return where, key
        if isinstance(value, dict):
            found = _non_text_key(value, f"{where}.{key}" if where else key)
            if found is not None:
                return found
    return None


def setup_path(experiment: str, setup: str) -> Path:
    """The YAML file of ``setup``: a packaged setup name, or a path ending in ``.yaml``/``.yml``."""
    if str(setup).endswith((".yaml", ".yml")):
        return Path(setup)
    path = CONFIG_ROOT / experiment / f"{setup}.yaml"
    if not path.is_file():
        setups = available_setups(experiment)
        saved = Path(setup).expanduser() / "config.yaml"
        # a run's results folder: its resolved configuration is the file to run again (docs/experiments/contract.md)
        hint = f" To run the configuration of that results folder again, give --setup {str(saved)!r}." if (
            Path(setup).expanduser().is_dir() and saved.is_file()) else did_you_mean(setup, setups)
        raise ConfigError(f"The setup {setup!r} of {experiment} is neither a packaged setup "
                          f"({', '.join(setups)}) nor a path to a .yaml file.{hint}")
    return path


def available_setups(experiment: str) -> list[str]:
    """Names of the packaged setups of ``experiment``."""
    return sorted(p.stem for p in (CONFIG_ROOT / experiment).glob("*.yaml"))


# ---------------------------------------------------------------- merging
def dotted_keys(values: dict, prefix: str = "") -> set[str]:
    """Every key of the nested mapping ``values``, dotted: ``{"a": {"b": 1}}`` -> ``{"a", "a.b"}``."""
    keys = set()
    for key, value in values.items():
        name = f"{prefix}{key}"
        keys.add(name)
        if isinstance(value, dict):
            keys |= dotted_keys(value, f"{name}.")
    return keys


def merge(base: dict, update: dict) -> dict:
    """``update`` merged over ``base``: nested mappings merge recursively, other values replace (new dict)."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_set_options(pairs, *, experiment: str) -> dict:
    """Turn ``--set KEY=VALUE`` strings into a nested mapping (dotted keys nest); values parsed as YAML."""
    out: dict = {}
    for pair in pairs:
        key, sep, text = str(pair).partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"--set of {experiment} expects KEY=VALUE (dotted keys for nested values, e.g. "
                              f"--set lr=1e-3). Got {_shown(pair)} instead.")
        from isotropy.experiments._yaml import MAX_DEPTH

        if key.count(".") >= MAX_DEPTH:  # as deep as a YAML file may nest: 1,000 levels were a RecursionError
            raise ConfigError(f"--set of {experiment}: the key {_shown(key)} nests {key.count('.') + 1} levels; "
                              f"expected at most {MAX_DEPTH} (a config nests two or three).")
        value = parse_yaml_value(text, where=f"--set {_cut_key(key)}")  # a 1,000-character key was echoed whole
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return out


def bool_words(pairs) -> dict[tuple, str]:
    """The ``--set`` values YAML read as a boolean from a word other than true and false: ``{key path: the text}``.

    YAML 1.1 (PyYAML) reads ``yes``, ``no``, ``on`` and ``off`` as booleans, so ``--set updates=yes`` was refused
    with "Got True instead", a value the user never typed; :func:`validate` shows the text with what it was read as.
    A later ``--set`` of the same key (or of a section above it) takes the place of an earlier one, as its value does.
    """
    words: dict[tuple, str] = {}
    for pair in pairs:
        key, sep, text = str(pair).partition("=")
        path = tuple(key.strip().split("."))
        words = {p: t for p, t in words.items() if p[:len(path)] != path}
        if not sep or text.strip().lower() in ("true", "false"):
            continue
        try:
            value = parse_yaml_value(text, where=f"--set {_cut_key(key.strip())}")
        except ConfigError:  # refused where the value is parsed
            continue
        if isinstance(value, bool):
            words[path] = text.strip()
    return words


# ---------------------------------------------------------------- validation
def _section(annotation) -> type[BaseModel] | None:
    """The sub-model a field holds (a section of the config: ``SweepConfig`` also of ``SweepConfig | None``)."""
    import types
    import typing

    members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return next((m for m in members if isinstance(m, type) and issubclass(m, BaseModel)), None)


def _section_of(info) -> type[BaseModel] | None:
    """The sub-model of a field: its section's, or the config whose values it overrides (:class:`OverridesOf`)."""
    marker = _overrides_of(info)
    return marker.model if marker is not None else _section(getattr(info, "annotation", None))


def _field_names(model: type[BaseModel], path: tuple) -> list[str] | None:
    """The keys allowed at ``path`` of ``model`` (None when that place is not a sub-model)."""
    node, info = model, None
    for part in path:
        if not isinstance(part, str) or node is None:
            return None
        info = node.model_fields.get(part)
        node = _section_of(info)
    excluded = getattr(_overrides_of(info), "exclude", ())  # keys an OverridesOf key leaves to the config's top
    return [name for name in node.model_fields if name not in excluded] if node is not None else None


def _takes_null(model: type[BaseModel], path: tuple) -> bool:
    node, info = model, None
    for part in path:
        info = node.model_fields.get(part) if node is not None and isinstance(part, str) else None
        node = _section_of(info)
    annotation = getattr(info, "annotation", None)
    return annotation is not None and type(None) in getattr(annotation, "__args__", ())


def _data_path(loc: tuple, data: Any) -> tuple:
    """The part of a pydantic error location that names keys of the input (drops union-member tags)."""
    path, node = [], data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str):
            path.append(part)
            node = node.get(part)  # None for a missing or an unknown key
        elif isinstance(node, list) and isinstance(part, int):
            path.append(part)
            node = node[part] if 0 <= part < len(node) else None
        # otherwise the part tags a member of a union type ("int", "list[int]"): not a key of the input
    return tuple(path)


def _dotted(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _expected(model: type[BaseModel], path: tuple) -> dict:
    """A field's own wording of what it accepts and the names it suggests from (:func:`expects`); {} if none.

    Also in an optional section (``token_level: TokenLevelConfig | None``), as in a required one.
    """
    node, info = model, None
    for part in path:
        if isinstance(part, int) or node is None:
            break
        info = node.model_fields.get(part)
        node = _section_of(info)
    extra = getattr(info, "json_schema_extra", None)
    return extra if isinstance(extra, dict) else {}


def _suggest(name: str, known: list[str]) -> list[str]:
    """The closest known key (difflib), or one whose letters are the initials of ``name`` (learning_rate -> lr)."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return close
    initials = "".join(part[:1] for part in re.split(r"[_\-.]+", name.lower()) if part)
    return [k for k in known if len(initials) > 1 and k.lower() == initials][:1]


def _pydantic_wording(errors: list[dict]) -> str:
    """What pydantic's errors of one place say the value must be, as the words after "must be"."""
    parts = []
    for e in errors:
        msg = e["msg"]
        msg = re.sub(r"^(Input should be|Value error,|Assertion failed,)\s*", "", msg)
        # pydantic's sentences about lengths, as what the value must be ("must be String should have ...")
        msg = re.sub(r"^String should have at least 1 character$", "a non-empty text", msg)
        msg = re.sub(r"^String should have at least (\d+) characters$", r"a text of at least \1 characters", msg)
        msg = re.sub(r"^List should have at least 1 item after validation, not 0$", "a non-empty list", msg)
        msg = re.sub(r"^a valid (\w)", lambda m: ("an " if m.group(1) in "aeiou" else "a ") + m.group(1), msg)
        if msg not in parts:
            parts.append(msg)
    return " or ".join(parts)


# "a [non-empty] list [[k_min, k_max]] of [two] [distinct] ITEMS [such as [...]] [(...)]", also after "X or "
_LIST_OF = re.compile(r"\ban? (?:non-empty )?list (?:\[[^\]]*\] )?of (?:two |distinct )*(?P<items>.+)$")
# the plural noun of ITEMS and the bound after it ("ints >= 2", "floats in [0, 1]")
_PLURAL = re.compile(r"(?P<head>.*?)(?P<plural>\bindices|(?<=\w)ies|(?<=\w)s)(?P<bound>(?: (?:>=|<=|>|<|in) .*)?)$")


def _item_wording(expected: str) -> str | None:
    """What one item of a list must be, from the list's wording; None when it is not worded "a list of ITEMS".

    "a non-empty list of distinct non-negative ints such as [0, 1, 2]" -> "a non-negative int": an item's error
    said the list's wording, as if the item itself had to be a list (``--set 'seeds=[true]'``, a new-user trial).
    """
    listed = _LIST_OF.search(expected)
    if listed is None:
        return None
    items = re.sub(r" such as \[[^\]]*\]| \([^)]*\)$", "", listed.group("items"))  # the list's example, its gloss
    noun = _PLURAL.match(items)
    if noun is None:
        return None
    one = noun.group("head") + {"indices": "index", "ies": "y", "s": ""}[noun.group("plural")] + noun.group("bound")
    return ("an " if one[0].lower() in "aeiou" else "a ") + one


def _format_errors(exc: ValidationError, model: type[BaseModel], data: dict, *, experiment: str,
                   words: dict | None = None) -> str:
    def shown(path: tuple, value) -> str:
        """The value refused: a boolean YAML read from ``--set KEY=yes`` as the text typed (:func:`bool_words`)."""
        if isinstance(value, bool) and path in (words or {}):
            return f"{_shown(words[path])} (read as {str(value).lower()})"
        return _shown(value)

    grouped: dict[tuple, list[dict]] = {}
    for error in exc.errors(include_url=False):
        grouped.setdefault(_data_path(error["loc"], data), []).append(error)
    messages = []
    for path, errors in grouped.items():
        dotted = _dotted(path) or "config"
        key = _cut_key(dotted)  # --set 'x...x=1' with a 100,000-character key was echoed whole
        kinds = {e["type"] for e in errors}
        if "extra_forbidden" in kinds:
            name = path[-1] if path else "?"
            known = _field_names(model, path[:-1]) or []
            if name in _CONTEXT_KEYS and len(path) == 1:
                messages.append(f"'{key}' is not a config key of {experiment}: it is chosen on the command line "
                                f"with {_CONTEXT_KEYS[name]}.")
                continue
            close = _suggest(str(name), known)
            prefix = _cut_key(dotted[: len(dotted) - len(str(name))])  # 'synthetic.' of a nested key: a whole key
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else f"; expected one of {', '.join(known)}."
            messages.append(f"Unknown config key '{key}' for {experiment}{hint}")
            continue
        if "missing" in kinds:
            messages.append(f"The config of {experiment} lacks the required key '{key}'.")
            continue
        keys = _field_names(model, path) if "model_type" in kinds else None
        if keys:  # a value where a section (a mapping of keys) belongs: name its keys, not the pydantic class
            null = " (or null)" if _takes_null(model, path) else ""
            messages.append(f"The '{key}' setting of {experiment} is a section{null}, not a value: set its keys "
                            f"({', '.join(keys)}) one by one, e.g. --set {key}.{keys[0]}=... "
                            f"Got {shown(path, errors[0].get('input'))} instead.")
            continue
        rule = next((e for e in errors if e["type"] == "config_rule"), None)
        if rule is not None:
            messages.append(f"The '{key}' setting of {experiment} {rule['msg']}. Got {shown(path, rule.get('input'))} "
                            f"instead.")
            continue
        extra = _expected(model, path)
        expected = extra.get("expected")
        if expected is None:
            expected = _pydantic_wording(errors)
        value = errors[0].get("input")
        choices = extra.get("choices", ()) or _literal_choices(errors)
        if choices and path and isinstance(path[-1], int):  # an item of a list of names: one name, not a list
            # the list's own wording after "from" ("a list of data sets from STS12, ..." -> "one of STS12, ...")
            listed = expected.split(" from ", 1)[1] if " from " in expected else ", ".join(map(str, choices))
            expected = f"one of {listed}"
        elif path and isinstance(path[-1], int) and "expected" in extra:  # an item of a list: what one item must be
            expected = _item_wording(expected) or _pydantic_wording(errors)
        if isinstance(value, str) and value in choices:  # a valid name where a list of them belongs
            close = f" Write a list: {key}=[{value}]"
        else:
            close = did_you_mean(value, choices)
        quoted = ""
        if isinstance(value, str) and _is_number_text(value) and re.search(r"\b(numbers?|ints?|integers?|floats?)\b",
                                                                         expected):
            # lr: "0.01" (quoted, as the docs warn), or a form YAML 1.1 reads as text (-.5, 1e-3): say how to write it
            number = float(value)
            plain = str(int(number)) if number.is_integer() and re.search(r"\bint", expected) else repr(number)
            quoted = f" (read as text, not a number: write it as {plain}, without quotes)"
        messages.append(f"The '{key}' setting of {experiment} must be {expected}. Got {shown(path, value)}{quoted} "
                        f"instead.{close}")
    if len(messages) > _MESSAGES:  # 90,000 bad list items were an 8.4 MB line, one sentence each
        messages[_MESSAGES:] = [f"({len(messages) - _MESSAGES} more settings are wrong.)"]
    return " ".join(messages)


def _is_number_text(text: str) -> bool:
    """Whether ``text`` is a number written as a string (``"0.01"``, ``"3"``, ``"1e-4"``), not ``"nan"`` or ``"inf"``."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _literal_choices(errors: list) -> list[str]:
    """The names a ``Literal`` field takes, from pydantic's error (``'sentence-transformers' or 'mean'``), for the
    message's "Did you mean ...?" where the field names no ``choices`` of its own; [] for any other error."""
    literal = next((e for e in errors if e.get("type") == "literal_error"), None)
    if literal is None:
        return []
    return re.findall(r"'([^']*)'", str((literal.get("ctx") or {}).get("expected", "")))


# Problems of a config said in one error, the rest counted
_MESSAGES = 10


def _cut_key(key: str, limit: int = 80) -> str:
    """A dotted config key as a message quotes it: cut to ``limit`` characters and its length said when longer."""
    return key if len(key) <= limit else f"{key[:limit - 3]}... ({len(key):,} characters)"


def _shown(value, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters and its length said: a 100 KB value was echoed whole.

    An int past Python's 4,300-digit limit of ``repr`` (``0xfff...`` of 5,000 hex digits: a ValueError
    that was the whole message) is said by its size. The library's shortener
    (:func:`isotropy._utils.validation._describe`) with this limit.
    """
    return _describe(value, limit, length=True)


def resolve_config(model: type[BaseModel], *, experiment: str, setup: str | None = None,
                   default_setup: str | None = None, sets=(), overrides: dict | None = None,
                   others=None, words: dict | None = None) -> BaseModel:
    """Merge the layers (packaged defaults, ``setup``, ``overrides``, ``--set`` strings) and validate them.

    :func:`resolve_values`, then :func:`validate`; the parameters are those of :func:`resolve_values`, and
    ``words`` those of :func:`bool_words` of ``--set`` strings already parsed into ``overrides``.
    """
    data = resolve_values(model, experiment=experiment, setup=setup, default_setup=default_setup, sets=sets,
                          overrides=overrides, others=others)
    return validate(model, data, experiment=experiment, words={**(words or {}), **bool_words(sets)})


def resolve_values(model: type[BaseModel], *, experiment: str, setup: str | None = None,
                   default_setup: str | None = None, sets=(), overrides: dict | None = None,
                   others=None) -> dict:
    """The merged layers (packaged defaults, ``setup``, ``overrides``, ``--set`` strings), not yet validated.

    Parameters
    ----------
    model : pydantic model class
        The experiment's config schema.
    experiment : str
        Its name (the folder under ``isotropy/configs``; used in messages).
    setup : str, optional
        A packaged setup name or a path to a user's (partial) YAML file; default ``default_setup``.
    default_setup : str, optional
        The packaged setup whose values are the defaults under every other setup.
    sets : iterable of str
        ``KEY=VALUE`` strings (``--set``).
    overrides : dict, optional
        Values already parsed (nested mappings), applied after the setup and before ``sets``.
    others : callable, optional
        ``others() -> {name: config model}`` of the other experiments: a config file of one of them
        (a saved ``config.yaml`` older than its ``experiment`` key) is named in one line.

    Returns
    -------
    dict
        The values :func:`validate` checks against ``model``.
    """
    layers = []
    if default_setup is not None:
        layers.append(load_yaml(setup_path(experiment, default_setup), name=f"packaged setup {default_setup!r}"))
    if setup is not None and setup != default_setup:
        path = setup_path(experiment, setup)
        is_file = str(setup).endswith((".yaml", ".yml"))
        data = load_yaml(path, name="config file" if is_file else f"packaged setup {setup!r}")
        if is_file:
            data = _own_config(data, path, model=model, experiment=experiment, others=others)
        layers.append(data)
    if overrides:
        layers.append(overrides)
    layers.append(parse_set_options(sets, experiment=experiment))
    data: dict = {}
    for layer in layers:
        data = merge(data, layer)
    return data


def _run_it_with(name: str, path: Path) -> str:
    import shlex

    return f"run it with: isotropy run {name} --setup {shlex.quote(str(path))}"


def _own_config(data: dict, path: Path, *, model: type[BaseModel], experiment: str, others) -> dict:
    """A config file's values less its ``experiment`` key, once the file is known to be ``experiment``'s.

    A saved ``config.yaml`` names the experiment that wrote it (:func:`dump_config`); one of another
    experiment is refused in one line with the command to use. A file without the key (a user's partial
    YAML, or a config saved before the key existed) whose keys are not all ``experiment``'s is compared
    with the other experiments' schemas: a complete config of one of them (all its required keys, no
    key it lacks) is named the same way; anything else is left to the key-by-key messages.
    """
    if EXPERIMENT_KEY in data:
        return own_values(data, experiment=experiment, others=others, where=f"the config file {str(path)!r}",
                          run_it_with=lambda named: _run_it_with(named, path))
    if others is None or set(data) <= set(model.model_fields):
        return data
    owners = [name for name, other in others().items() if name != experiment and set(data) <= set(other.model_fields)
              and {k for k, f in other.model_fields.items() if f.is_required()} <= set(data)]
    if owners:
        foreign = [k for k in data if k not in model.model_fields]
        shown = ", ".join(foreign[:4]) + (", ..." if len(foreign) > 4 else "")
        raise ConfigError(f"The config file {str(path)!r} is a config of {' or '.join(owners)}, not of {experiment} "
                          f"(its keys {shown} are not {experiment}'s); {_run_it_with(owners[0], path)}")
    return data


def own_values(data: dict, *, experiment: str, others=None, where: str = "the config mapping",
               run_it_with=None) -> dict:
    """``data`` less its ``experiment`` key (a saved ``config.yaml``'s first key), once it names ``experiment``.

    The key takes exactly the names ``isotropy run`` takes (``minibatch-stability``, not
    ``minibatch_stability``). One naming another experiment (of ``others() -> {name: model}``) is
    refused in one line naming it, followed by ``run_it_with(name)`` where given (the command to
    run a file with; a mapping given to :func:`~isotropy.experiments._runner.execute` has none).
    ``where`` says what ``data`` is in the messages. A mapping without the key is returned as it is.
    """
    if EXPERIMENT_KEY not in data:
        return data
    data = dict(data)
    named = data.pop(EXPERIMENT_KEY)
    if named != experiment:
        if isinstance(named, str) and others is not None and named in others():
            advice = f"; {run_it_with(named)}" if run_it_with is not None else "."
            raise ConfigError(f"{where[:1].upper()}{where[1:]} is a config of {named} (its '{EXPERIMENT_KEY}' key), "
                              f"not of {experiment}{advice}")
        raise ConfigError(f"The '{EXPERIMENT_KEY}' key of {where} must name the experiment it is run with, "
                          f"{experiment}. Got {named!r} instead.")
    return data


def dump_config(values: dict, *, experiment: str) -> str:
    """A resolved config as YAML, headed by the experiment it belongs to (``config.yaml``, ``--print-config``).

    The ``experiment`` key is not a config key: :func:`resolve_config` checks it and drops it when the
    file is given back as ``--setup FILE.yaml``.
    """
    import yaml

    return yaml.safe_dump({EXPERIMENT_KEY: experiment, **values}, sort_keys=False)


def validate(model: type[BaseModel], data: dict, *, experiment: str, words: dict | None = None) -> BaseModel:
    """``model(**data)``, every failure turned into one :class:`ConfigError` line.

    ``words``: :func:`bool_words` of the ``--set`` strings in ``data``; a refused boolean among them is shown as typed.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, model, data, experiment=experiment, words=words)) from None


def config_hash(values: dict, *, ignore=()) -> str:
    """A short SHA-256 of the config values (canonical JSON), leaving out the keys in ``ignore``."""
    kept = {k: v for k, v in values.items() if k not in set(ignore)}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
