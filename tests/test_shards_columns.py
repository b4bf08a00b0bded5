"""Parquet shards are joined by position, so their vector columns must have the same names in the same order.

A shard with columns g0.. among shards of f0.., or f2, f1, f0 among f0, f1, f2, was stacked as if it matched
(``isotropy measure DIR`` gave a wrong isoscore, silently). It is now refused in one line naming the shard and
the first column that differs; the names come from the one row each shard's header check reads already.
"""

from __future__ import annotations

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import isotropy
from isotropy import IsotropyValueError
from isotropy.cli import cli
from isotropy.io.shards import read_shards

X = np.random.default_rng(0).normal(size=(60, 3)) * [1.0, 2.0, 5.0]


@pytest.fixture(scope="module", autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def _columns(rows, names):
    return pa.table({name: rows[:, i] for i, name in enumerate(names)})


def _write(root, tables):
    root.mkdir()
    for k, table in enumerate(tables):
        pq.write_table(table, root / f"part-{k}.parquet")
    return root


def _refusal(root, **kwargs):
    with pytest.raises(IsotropyValueError) as info:
        read_shards(root, **kwargs)
    return str(info.value)


def _expected(first="part-0.parquet"):
    return (f"expected the vector columns of {first!r}, the same names in the same order, in every Parquet shard "
            f"(shards are joined by position; rename or reorder this shard's columns).")


def test_a_shard_with_its_columns_in_another_order_is_refused_not_stacked(tmp_path):
    names = ["f0", "f1", "f2"]
    root = _write(tmp_path / "s", [_columns(X[:20], names), _columns(X[20:40], names),
                                   _columns(X[40:], names).select(names[::-1])])
    bad = str(root / "part-2.parquet")
    line = (f"Cannot read embeddings from {bad!r}: the shard's feature column 0 is 'f2' where 'part-0.parquet' has "
            f"'f0' (columns 'f2', 'f1', 'f0', the same names in another order); {_expected()}")
    assert _refusal(root) == line
    result = CliRunner().invoke(cli, ["measure", str(root), "--metrics", "isoscore"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"Error: {line}"]


def test_a_shard_with_other_column_names_is_refused(tmp_path):
    root = _write(tmp_path / "s", [_columns(X[:30], ["f0", "f1", "f2"]), _columns(X[30:], ["f0", "g1", "g2"])])
    assert _refusal(root) == (f"Cannot read embeddings from {str(root / 'part-1.parquet')!r}: the shard's feature "
                              f"column 1 is 'g1' where 'part-0.parquet' has 'f1' (columns 'f0', 'g1', 'g2'); "
                              f"{_expected()}")


def test_columns_of_vectors_compare_the_column_name_and_layouts_do_not_mix(tmp_path):
    vectors = _write(tmp_path / "v", [pa.table({"vector": list(X[:30])}), pa.table({"emb": list(X[30:])})])
    assert _refusal(vectors) == (f"Cannot read embeddings from {str(vectors / 'part-1.parquet')!r}: the shard's "
                                 f"vectors are in column 'emb' where 'part-0.parquet' has them in 'vector'; "
                                 f"{_expected()}")
    mixed = _write(tmp_path / "m", [_columns(X[:30], ["f0", "f1", "f2"]), pa.table({"vector": list(X[30:])})])
    assert _refusal(mixed) == (f"Cannot read embeddings from {str(mixed / 'part-1.parquet')!r}: the shard holds one "
                               f"column of vectors 'vector' where 'part-0.parquet' holds one column per feature "
                               f"('f0', 'f1', 'f2'); {_expected()}")


def test_matching_shards_still_read_other_columns_aside(tmp_path):
    # the same vector columns: read as before, whatever else a shard holds (ids, words) and whatever key selects;
    # the words first, as row names (a text column after the features is refused, as in a .csv file)
    names = ["f0", "f1", "f2"]
    per_feature = _write(tmp_path / "f", [_columns(X[:30], names).add_column(0, "word", pa.array(["w"] * 30)),
                                          _columns(X[30:], names)])
    np.testing.assert_array_equal(read_shards(per_feature).compute(), X)
    assert isotropy.isoscore(read_shards(per_feature)) == pytest.approx(isotropy.isoscore(X), rel=1e-10)
    keyed = _write(tmp_path / "k", [pa.table({"id": np.arange(30), "vector": list(X[:30]), "other": list(X[:30])}),
                                    pa.table({"other": list(X[30:]), "vector": list(X[30:])})])
    np.testing.assert_array_equal(read_shards(keyed, key="vector").compute(), X)


def test_column_names_come_from_the_header_row_not_a_second_read(tmp_path, monkeypatch):
    import isotropy.io.shards as shards_module

    names = ["f0", "f1", "f2"]
    root = _write(tmp_path / "s", [_columns(X[:30], names), _columns(X[30:], names[::-1])])
    reads = []
    real = shards_module._read_parquet
    monkeypatch.setattr(shards_module, "_read_parquet", lambda path, *a, **k: reads.append(path) or real(path, *a, **k))
    _refusal(root)
    assert [type(path).__name__ for path in reads] == ["_NamedBuffer", "_NamedBuffer"]  # one row each, in memory
