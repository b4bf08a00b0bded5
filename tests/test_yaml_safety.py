"""Bounded work on YAML configs (issue 19): aliases, depth, duplicate keys and non-finite numbers are refused in one line.

The hostile files of the issue: a 435-byte "billion laughs" on a known key took 107 s and 7.9 GB
before a MemoryError traceback; a 20,000-deep list was a RecursionError; a duplicate key silently
took the last value; ``lr: 1e400`` and ``lr: .inf`` passed validation.
"""

from __future__ import annotations

import contextlib
import math
import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy.experiments._config import ConfigError, load_yaml, parse_yaml_value
from isotropy.experiments._yaml import _EXPONENT_FLOAT, EXCERPT, MAX_DEPTH, PythonTagError, UnsafeYAMLError, safe_load

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def billion_laughs(levels: int = 9, key: str = "lr") -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, levels):
        text += f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]\n"
    return text + f"{key}: *{chr(96 + levels)}\n"


HOSTILE = {
    "billion laughs": (billion_laughs(), "expands to more than"),
    "recursive alias": ("lr: &a [*a]\n", "recursive alias"),
    "deep list": ("lr: " + "[" * 20_000 + "]" * 20_000 + "\n", "nesting deeper than"),
    "deep mapping": ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200)), "nesting deeper than"),
    "duplicate key": ("lr: 0.1\nlr: 0.2\n", "duplicate key 'lr'"),
    "duplicate nested key": ("a: {b: 1, b: 2}\n", "duplicate key 'b'"),
    "1e400": ("lr: 1e400\n", "'1e400' is not finite"),
    ".inf": ("lr: .inf\n", "'.inf' is not finite"),
    "-.inf": ("lr: -.Inf\n", "is not finite"),
    ".nan": ("lr: .nan\n", "'.nan' is not finite"),
    "huge int": ("updates: " + "9" * 20_000 + "\n", "too many digits"),
}


@contextlib.contextmanager
def _peak_memory():
    """``[peak]``: the most bytes Python allocated at once within the block (tracemalloc), filled in on exit."""
    peak = [0]
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_yaml_is_refused_quickly(name):
    text, message = HOSTILE[name]
    with _peak_memory() as peak, pytest.raises(UnsafeYAMLError) as info:
        safe_load(text)
    assert peak[0] < 32 * 2**20, peak  # refused before anything is expanded (no timed assert: the machine's load varies)
    reason = " ".join(str(info.value.problem).split())
    assert message in reason, reason
    assert len(reason) < 200


def test_billion_laughs_is_435_bytes_and_needs_no_memory():
    assert len(billion_laughs(10)) < 500
    with _peak_memory() as peak, pytest.raises(UnsafeYAMLError):
        safe_load(billion_laughs(10))
    assert peak[0] < 32 * 2**20, peak


@pytest.mark.parametrize("name", ["billion laughs", "deep list", "duplicate key", "1e400", ".inf", ".nan"])
def test_hostile_setup_file_is_one_line(tmp_path, name):
    # the command line prints a ConfigError as "Error: <message>", exit 2
    # (test_experiment_config.py::test_every_bad_config_file_is_one_line_and_exit_2)
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE[name][0])
    with _peak_memory() as peak, pytest.raises(ConfigError) as info:
        load_yaml(path)
    message = str(info.value)
    assert peak[0] < 32 * 2**20, peak
    assert "\n" not in message and len(message) < 400, message[:500]
    assert HOSTILE[name][1] in message and str(path) in message


def test_a_long_list_is_refused_as_it_is_composed_not_as_a_billion_laughs():
    """500,000 plain values: refused once the 100,001st is composed, by what it is (no alias in it)."""
    with pytest.raises(UnsafeYAMLError) as info:
        safe_load("lr: [" + "1," * 500_000 + "1]\n")
    assert info.value.problem == "more than 100,000 values; expected a config"
    assert info.value.problem_mark.column < 2 * 100_002 + 6  # stopped at the 100,001st value, not at the end
    assert len(safe_load("lr: [" + "1," * 99_995 + "1]\n")["lr"]) == 99_996  # with the mapping, key and list: 99,999


def test_a_config_file_past_one_mib_is_not_read_whole(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * 120_000 + "lr: 0.1\n")
    with pytest.raises(ConfigError, match=r"big.yaml' is larger than 1 MiB; expected a config file"):
        load_yaml(big)
    with pytest.raises(ConfigError, match=r"'/dev/zero' is a character device, not a regular file; expected a config"):
        load_yaml("/dev/zero")  # a device that never ends: refused before it is opened


@pytest.mark.parametrize("value", ["1e400", ".inf", ".nan", "[1, 1e999]"])
def test_set_values_refuse_non_finite_numbers(value):
    with pytest.raises(ConfigError, match="not finite"):
        parse_yaml_value(value, where="--set lr")


@pytest.mark.parametrize(("value", "message"), [
    ("[017]", r"the number '017' has a leading zero, which YAML 1.1 reads as octal \(15\) and YAML 1.2 as decimal"),
    ("-0_7", r"the number '-0_7' has a leading zero, which YAML 1.1 reads as octal \(-7\)"),
    ("1:30", r"the value '1:30' is a base-60 number under YAML 1.1 \(90\)"),
    ("-1:30.5", r"the value '-1:30.5' is a base-60 number under YAML 1.1 \(-90.5\)"),
])
def test_set_values_refuse_yaml_1_1_numbers_that_read_otherwise(value, message):
    # before: --set seeds=[017] ran seed 15 and --set lr=1:30 a learning rate of 90.0, silently
    with pytest.raises(ConfigError, match=message):
        parse_yaml_value(value, where="--set x")


def test_numbers_that_read_alike_under_yaml_1_1_and_1_2_are_kept():
    assert safe_load("[0, 00, -0, 0.5, 012.5, 0x1F, 1e-3, '017', '1:30', 10:70, 08]") == [
        0, 0, 0, 0.5, 12.5, 31, 0.001, "017", "1:30", "10:70", "08"]


def test_messages_quote_only_an_excerpt_of_a_value():
    key = "k" * 1000
    with pytest.raises(UnsafeYAMLError) as info:
        safe_load(f"{key}: 1\n{key}: 2\n")
    assert len(info.value.problem) < EXCERPT + 120


def test_ordinary_yaml_keeps_its_meaning():
    text = ("lr: 1e-3\nwarmup: 5E+2\nseeds: [0, 1, 2]\nname: run\nbase: &b {a: 1, c: 2}\n"
            "x:\n  <<: *b\n  a: 3\nshared: *b\nflag: true\nnothing: null\n")
    assert safe_load(text) == {"lr": 0.001, "warmup": 500.0, "seeds": [0, 1, 2], "name": "run",
                               "base": {"a": 1, "c": 2}, "x": {"a": 3, "c": 2}, "shared": {"a": 1, "c": 2},
                               "flag": True, "nothing": None}
    assert safe_load("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)) is not None


def test_python_tags_stay_refused():
    with pytest.raises(yaml.YAMLError):
        safe_load("x: !!python/object/apply:os.system ['true']\n")


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system", "!!python/name:os.system",
                                 "!!python/object/new:subprocess.Popen", "!!python/tuple"])
def test_python_tags_are_refused_by_design_not_called_invalid(tmp_path, tag):
    """A ``!!python/...`` tag is valid YAML: the message names the tag, its line and the safe loader's design."""
    marker = tmp_path / "ran"
    text = f"lr: 0.1\nseeds:\n  - 0\nx: {tag} ['touch {marker}']\n"
    with pytest.raises(PythonTagError) as info:
        safe_load(text)
    assert info.value.tag == repr(tag) and info.value.problem_mark.line == 3
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as config_info:
        load_yaml(path)
    message = str(config_info.value)
    assert message == (f"The config file {str(path)!r} uses the tag {tag!r} at line 4, column 4, which constructs a "
                       f"Python object: tags that construct Python objects are refused by design (a safe loader: a "
                       f"config runs no code).")
    assert "valid YAML" not in message
    with pytest.raises(ConfigError, match=rf"^--set x: .* uses the tag '{tag}' at line 1, column 1, which constructs "
                                          r"a Python object: tags that construct Python objects are refused by design"):
        parse_yaml_value(f"{tag} ['touch {marker}']", where="--set x")
    assert not marker.exists()
    with pytest.raises(ConfigError, match="is not valid YAML: could not determine a constructor for the tag '!foo'"):
        path.write_text("x: !foo 1\n")  # an unknown tag that is not Python's: still reported as before
        load_yaml(path)


# ---------------------------------------------------------------- fuzz: YAML setups
# strings like '1e5' are left out: yaml.safe_dump writes them unquoted (YAML 1.1 reads them as strings)
# and the config loader reads them as the float they look like, on purpose
_texts = st.text(max_size=12).filter(lambda t: not _EXPONENT_FLOAT.match(t.strip()))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                     st.floats(allow_nan=False, allow_infinity=False), _texts)
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(_texts, inner, max_size=4)),
                       max_leaves=20)


@SETTINGS
@given(data=st.dictionaries(_texts.filter(bool), _values, min_size=1, max_size=5))
def test_fuzz_yaml_setups_round_trip(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("yaml") / "setup.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    loaded = load_yaml(path)
    assert loaded == data


@SETTINGS
@given(text=st.lists(st.sampled_from(list("ab:-&*[]{},!\n .e19<>'\"#|?%@") + ["  ", ".inf", ".nan", "<<", "&a", "*a"]),
                    max_size=60).map("".join))
def test_fuzz_yaml_setups_are_a_mapping_or_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("yaml") / "setup.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        data = load_yaml(path)
    except ConfigError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 600, message
        return
    assert isinstance(data, dict)
    _assert_finite(data)


def _assert_finite(value):
    if isinstance(value, float):
        assert math.isfinite(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _assert_finite(key)
            _assert_finite(item)
    elif isinstance(value, list):
        for item in value:
            _assert_finite(item)
