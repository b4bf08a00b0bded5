"""Counts of ``isotropy measure``: bounded at MAX_INT, named in one short line; one bound, one shortener.

A review: ``--shrinkage-sample`` of 5,000 digits was taken for a path ("File name too long" with the value whole) and
10**12 was a row count; ``--batch-size``/``--max-length`` echoed 5,000 digits whole (click's IntRange) and took any
size; and the bound and the shortener were each written twice.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_experiment_config import _cli

HUGE = "1" * 5000


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory):
    path = tmp_path_factory.mktemp("counts") / "x.npy"
    np.save(path, np.random.default_rng(0).normal(size=(20, 4)))
    return path


def _refused(args, capsys) -> str:
    code, out, err = _cli(["measure", *map(str, args)], capsys)
    line = err.strip()
    assert code == 2 and not out and "\n" not in line, err[:2000]
    assert "Traceback" not in line and "Exceeds the limit" not in line and "Errno" not in line, line[:2000]
    assert len(line) < 400, (len(line), line[:2000])
    return line


@pytest.mark.parametrize("value, expected", [
    (HUGE, "Error: --shrinkage-sample '1111"),  # not a path: a count past the bound
    (str(10**12), "Error: --shrinkage-sample '1000000000000': expected"),
    (f"-{HUGE}", "Error: --shrinkage-sample '-111"),
    ("1", "Error: --shrinkage-sample '1': expected"),
    ("x" * 5000, "Error: --shrinkage-sample 'xxxx"),  # a path too long for the file system: no OSError
], ids=["5000-digits", "10**12", "-5000-digits", "1", "long-path"])
def test_shrinkage_sample_is_a_bounded_count_or_a_file(embeddings, value, expected, capsys):
    line = _refused([embeddings, "--shrinkage-sample", value], capsys)
    assert line.startswith(expected), line
    if value.startswith("x"):
        assert line.endswith("expected a number of rows of at least 2 or a file of rows; that path cannot be "
                             "examined (File name too long)."), line
    else:
        assert line.endswith(": expected a number of rows in [2, 1,000,000,000] or a file of rows."), line


def test_shrinkage_sample_of_underscored_digits_is_a_count():
    from isotropy.measure.command import _parse_shrinkage_sample

    assert _parse_shrinkage_sample(None, None, "1_000") == 1000
    assert _parse_shrinkage_sample(None, None, " 25 ") == 25


@pytest.mark.parametrize("option, low", [("--batch-size", 1), ("--max-length", 2)])
@pytest.mark.parametrize("value", [HUGE, str(10**12)], ids=["5000-digits", "10**12"])
def test_model_batch_size_and_max_length_are_bounded_and_shortened(embeddings, option, low, value, capsys):
    line = _refused(["--model", "all-MiniLM-L6-v2", "--texts", embeddings, option, value], capsys)
    assert line.startswith(f"Error: Invalid value for '{option}': expected an integer in [{low}, 1000000000]. "
                           f"Got '{value[:40]}"), line
    if value == HUGE:
        assert line.endswith("... (5,002 characters) instead. (see 'isotropy measure --help')"), line


def test_one_bounded_int_type_and_one_bound():
    import isotropy.cli
    import isotropy.experiments._command as command
    import isotropy.measure.command as measure
    from isotropy._utils.click_types import BoundedInt
    from isotropy._utils.validation import MAX_INT
    from isotropy.experiments import _config

    assert MAX_INT == 10**9 and _config.MAX_INT is MAX_INT and not hasattr(measure, "_COUNT_MAX")
    assert command.BoundedInt is BoundedInt and not hasattr(isotropy.cli, "_BoundedInt")
    options = {p.name: p for p in measure.command.params}
    for name, low in (("batch_size", 1), ("max_length", 2)):
        assert isinstance(options[name].type, BoundedInt) and (options[name].type.min, options[name].type.max) == (
            low, MAX_INT)


@pytest.mark.parametrize("value, digits", [(10**5000, "5,001"), (10**5000 - 1, "5,000"), (-(16**5000 - 1), "6,021"),
                                           ((10**5000 - 1) // 9, "5,000")], ids=["10**5000", "9s", "-hex", "1s"])
def test_one_shortener_counts_the_digits_of_a_huge_int(value, digits):
    from isotropy._utils.validation import _describe
    from isotropy.experiments._config import _shown

    assert _describe(value) == _shown(value) == f"an int of about {digits} digits"
    assert _describe(value, limit=80) == _describe(value)
    assert _describe("x" * 100) == "'" + "x" * 56 + "..." and len(_describe("x" * 100)) == 60
    assert len(_describe("x" * 100, limit=80)) == 80
    assert _shown("x" * 100) == "'" + "x" * 79 + "... (102 characters)" == _describe("x" * 100, 80, length=True)
