"""Sharded embeddings (``isotropy.io.shards``) and ``isotropy measure`` on them with dask's local scheduler.

The reference for every value is the in-memory command or function on the concatenated shards.
"""

from __future__ import annotations

import json
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from dask.utils import format_bytes

import isotropy
from isotropy import IsotropyValueError
from isotropy.cli import cli
from isotropy.io.shards import _load_group as _ORIGINAL_LOAD
from isotropy.io.shards import is_sharded, read_shards


@pytest.fixture(scope="module", autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def shards(tmp_path):
    """Three .npy shards (one float32) and one .parquet shard of vectors; the concatenation; labels."""
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(n, 5)) + k for k, n in enumerate((40, 25, 31, 18))]
    root = tmp_path / "store"
    root.mkdir()
    np.save(root / "part-0.npy", parts[0])
    np.save(root / "part-1.npy", parts[1].astype(np.float32))
    np.save(root / "part-2.npy", parts[2])
    pd.DataFrame({"id": np.arange(18), "vector": list(parts[3])}).to_parquet(root / "part-3.parquet")
    (root / "README.txt").write_text("not a shard: ignored")
    full = np.vstack([parts[0], parts[1].astype(np.float32).astype(np.float64), parts[2], parts[3]])
    labels = np.repeat([0, 1, 2, 3], [40, 25, 31, 18])
    np.savetxt(tmp_path / "labels.txt", labels, fmt="%d")
    return root, full, labels


def test_directory_glob_and_zarr_read_lazily(shards, tmp_path):
    import dask.array as da

    root, full, _ = shards
    X = read_shards(root, chunk_rows=16)
    assert X.shape == full.shape and X.dtype == np.float64
    assert X.chunks[0] == (16, 16, 16, 16, 16, 16, 18)  # .npy shards cut and joined, parquet whole
    np.testing.assert_array_equal(X.compute(), full)
    assert read_shards(str(root / "part-[02].npy")).shape == (71, 5)
    da.to_zarr(da.from_array(full, chunks=(30, 5)), str(tmp_path / "x.zarr"))  # zarr 2 and 3 alike
    Z = read_shards(tmp_path / "x.zarr", chunk_rows=50)
    assert Z.chunks[0] == (50, 50, 14)
    np.testing.assert_array_equal(Z.compute(), full)
    assert is_sharded(root) and is_sharded(tmp_path / "x.zarr") and is_sharded(str(root / "*.npy"))
    assert not is_sharded(root / "part-0.npy")


def test_metrics_on_shards_equal_the_concatenation(shards):
    root, full, labels = shards
    X = read_shards(root, chunk_rows=20)
    assert isotropy.isoscore(X) == pytest.approx(isotropy.isoscore(full), rel=1e-10)
    assert isotropy.silhouette_score(X, labels) == pytest.approx(isotropy.silhouette_score(full, labels), rel=1e-10)


def _error(source, **kwargs):
    with pytest.raises((IsotropyValueError, FileNotFoundError)) as info:
        read_shards(source, **kwargs).compute()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_shards_are_named(shards, tmp_path):
    root, _, _ = shards
    np.save(root / "part-4.npy", np.ones((3, 6)))
    assert _error(root) == (f"Cannot read embeddings from {str(root / 'part-4.npy')!r}: the shard has 6 features "
                            f"(columns) but 'part-0.npy' has 5; expected shards of one width.")
    (root / "part-4.npy").write_bytes(b"\x93NUMPY garbage")
    assert _error(root).startswith(f"Cannot read embeddings from {str(root / 'part-4.npy')!r}: not a readable .npy")
    bad = np.ones((7, 5))
    bad[5, 3] = np.inf
    np.save(root / "part-4.npy", bad)
    assert _error(root) == (f"Cannot read embeddings from {str(root / 'part-4.npy')!r}: a non-finite value inf at "
                            f"row 5, column 3 of the shard (row 119 of all shards); expected finite numbers "
                            f"(no NaN or inf).")
    (root / "part-4.npy").unlink()
    (root / "part-5.parquet").write_bytes(b"PAR1 not really")
    assert "part-5.parquet" in _error(root) and "not a readable .parquet file" in _error(root)
    (root / "part-5.parquet").unlink()
    pd.DataFrame({"vector": [np.ones(4)] * 3}).to_parquet(root / "part-5.parquet")
    assert "part-5.parquet" in _error(root) and "4 features" in _error(root)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no .npy or .parquet shards found there" in _error(empty)
    assert "do not exist" in _error(tmp_path / "missing")
    assert "1-d" in _error(_one_dim(tmp_path))


def _one_dim(tmp_path):
    path = tmp_path / "flat"
    path.mkdir()
    np.save(path / "a.npy", np.ones(4))
    return path


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def test_measure_on_a_shard_directory_equals_the_in_memory_command(shards, tmp_path):
    root, full, _labels = shards
    np.save(tmp_path / "full.npy", full)
    metrics = "isoscore,participation_ratio,twonn_dimension,silhouette_score,calinski_harabasz_score,dunn_index"
    sharded = invoke(root, "--labels", tmp_path / "labels.txt", "--metrics", metrics, "--json", tmp_path / "s.json")
    assert sharded.exit_code == 0, sharded.output
    memory = invoke(tmp_path / "full.npy", "--labels", tmp_path / "labels.txt", "--metrics", metrics,
                    "--json", tmp_path / "m.json")
    assert memory.exit_code == 0, memory.output
    s, m = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("s", "m"))
    for name, value in m["values"].items():
        assert s["values"][name] == pytest.approx(value, rel=1e-10), name
    assert (s["n_samples"], s["n_features"], s["n_clusters"]) == (114, 5, 4)
    assert s["scheduler"] == "threads (dask default)" and s["workers"] is None
    assert s["chunking"]["n_chunks"] == 1 and s["chunking"]["dtype"] == "float64"  # 4 small shards, one chunk
    assert (m["scheduler"], m["workers"], m["chunking"]) == (None, None, None)
    assert s["versions"]["dask"] == dask.__version__
    # each shard the command read, in reading order, with its size; no digest over dask (data of any size)
    shards_read = sorted(p for p in root.iterdir() if p.suffix in (".npy", ".parquet"))
    assert [(e["path"], e["bytes"], e["sha256"]) for e in s["inputs"]["embeddings"]] == [
        (str(p), p.stat().st_size, None) for p in shards_read]
    assert m["inputs"]["embeddings"][0]["sha256"] is not None


def test_measure_sample_of_shards_takes_the_in_memory_rows(shards, tmp_path):
    root, full, _labels = shards
    np.save(tmp_path / "full.npy", full)
    args = ("--labels", tmp_path / "labels.txt", "--metrics", "silhouette_score,isoscore", "--sample-size", 60,
            "--random-state", 4)
    sharded, memory = invoke(root, *args), invoke(tmp_path / "full.npy", *args)
    assert sharded.exit_code == memory.exit_code == 0, sharded.output + memory.output
    assert sharded.stdout.splitlines()[2:] != [] and "a sample of 60 of its 114 rows" in sharded.stdout
    for got, want in zip(sharded.stdout.splitlines()[2:], memory.stdout.splitlines()[2:]):
        assert got.split()[:2] == want.split()[:2]


def test_measure_bad_shard_is_one_line_exit_2(shards):
    root, _, _ = shards
    bad = np.zeros((4, 5))
    bad[2, 1] = np.nan
    np.save(root / "part-9.npy", bad)
    result = invoke(root, "--metrics", "isoscore")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        (f"Error: Cannot read embeddings from {str(root / 'part-9.npy')!r}: a non-finite value nan at row 2, "
        f"column 1 of the shard (row 116 of all shards); expected finite numbers (no NaN or inf).")]
    assert invoke(root, "--workers", 2, "--scheduler", "tcp://localhost:1").exit_code == 2


def test_measure_memory_limit_option_sets_each_worker_and_wins_over_the_config_key(shards, tmp_path):
    root, full, _ = shards
    with dask.config.set({"isotropy.memory-limit": "700MB"}):
        result = invoke(root, "--workers", 1, "--memory-limit", "300MiB", "--metrics", "isoscore",
                        "--json", tmp_path / "o.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o.json").read_text())
    assert record["memory_limit"] == 300 * 2**20 and record["workers"] == 1  # as the scheduler reports it
    # said in a unit, not in bytes (it printed "memory_limit=314572800", and 12638091264 under 'auto')
    assert record["scheduler"] == "LocalCluster(1 worker process, memory_limit=300.00 MiB)"
    assert "dask: LocalCluster(1 worker process, memory_limit=300.00 MiB), " in result.output
    assert record["values"]["isoscore"] == pytest.approx(isotropy.isoscore(full), rel=1e-10)
    memory = invoke(root, "--metrics", "isoscore", "--json", tmp_path / "t.json")  # threaded: no limit to report
    assert memory.exit_code == 0 and json.loads((tmp_path / "t.json").read_text())["memory_limit"] is None


def test_measure_auto_memory_divides_the_machine_among_the_workers(shards, tmp_path, monkeypatch):
    """'auto' (no --memory-limit): the machine's memory divided among the workers, as the docs and --help say.
    dask's own 'auto' gave each worker the memory times its share of the cores: 1 worker got half of a 2-core
    machine, 4 workers twice the machine between them (a user trial)."""
    import distributed.system

    root, _, _ = shards
    result = invoke(root, "--workers", 1, "--metrics", "isoscore", "--json", tmp_path / "o.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o.json").read_text())
    assert record["memory_limit"] == distributed.system.MEMORY_LIMIT
    # in dask's own words for sizes: "11.77 GiB", not 12638091264
    assert record["scheduler"] == f"LocalCluster(1 worker process, memory_limit={format_bytes(record['memory_limit'])})"
    assert record["scheduler"].endswith(" GiB)")  # a machine of 1 GiB or more
    monkeypatch.setattr(distributed.system, "MEMORY_LIMIT", 600 * 2**20)  # a 600 MiB machine: 3 workers of 200
    result = invoke(root, "--workers", 3, "--metrics", "isoscore")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: --workers 3 divides this machine's 0.6 GiB into 200 MiB per worker; a worker needs at least 256 MiB "
        "(dask pauses it at 80% of its limit): expected at most 2 workers.")


@pytest.mark.parametrize(("args", "message"), [
    (("--workers", 2, "--memory-limit", "3XB"), "got '3XB'; expected a positive size such as 2GB or 512MiB, or 'auto'."),
    (("--workers", 2, "--memory-limit", "0"), "got '0'; expected a positive size such as 2GB or 512MiB, or 'auto'."),
    # 40MiB printed the table's header and hung: dask paused the workers, which hold more than 80% of that alone
    (("--workers", 2, "--memory-limit", "40MiB"), ("got '40MiB'; a worker process holds about 100 MiB of its own "
                                                  "(Python, numpy, dask) and dask pauses it at 80% of its limit, so "
                                                  "the command would wait for ever: expected at least 256MiB.")),
    (("--memory-limit", "2GB"), "--memory-limit sets the memory of each --workers process; give --workers N with it"),
    (("--scheduler", "tcp://localhost:1", "--memory-limit", "2GB"), "give --workers N with it"),
])
def test_measure_bad_memory_limit_is_one_line_exit_2(shards, args, message):
    root, _, _ = shards
    result = invoke(root, *args)
    assert result.exit_code == 2
    assert message in result.stderr.strip().splitlines()[-1]


def test_many_small_shards_are_coalesced_into_few_chunks(tmp_path):
    """1,000 one-row shards (and a Parquet one) are one chunk read by one task; values as in memory."""
    rng = np.random.default_rng(3)
    full = rng.normal(size=(1_030, 6))
    root = tmp_path / "tiny"
    root.mkdir()
    for i in range(1_000):
        np.save(root / f"part-{i:04d}.npy", full[i:i + 1])
    pd.DataFrame({"vector": list(full[1_000:])}).to_parquet(root / "part-1000.parquet")
    X = read_shards(root)
    assert X.chunks[0] == (1_030,)
    assert len(X.__dask_graph__()) <= 2  # the read task (and dask's alias of it), not one per shard
    np.testing.assert_array_equal(X.compute(), full)
    labels = np.arange(1_030) % 3
    assert isotropy.isoscore(X) == pytest.approx(isotropy.isoscore(full), rel=1e-10)
    assert isotropy.silhouette_score(X, labels) == pytest.approx(isotropy.silhouette_score(full, labels), rel=1e-10)
    assert isotropy.twonn_dimension(X) == pytest.approx(isotropy.twonn_dimension(full), rel=1e-10)
    cut = read_shards(root, chunk_rows=300)  # one-row shards joined up to 300 rows, the 30-row parquet with them
    assert cut.chunks[0] == (300, 300, 300, 130)
    np.testing.assert_array_equal(cut.compute(), full)


def test_measure_reads_chunks_of_a_neighbour_tile_at_most(tmp_path, monkeypatch):
    """`isotropy measure` on shards reads chunks of at most a neighbour tile's rows (8192), not the reader's 64 MiB
    chunks: a worker held a whole 64 MiB chunk to cut each tile from it (benchmarks/bench_read_chunks.py: its peak
    77-137 MiB lower). Narrow rows keep chunks the streaming metrics do not join again, wide rows chunks of about 64 MiB,
    a Parquet shard its rows; read_shards itself keeps its default; the values are those of the rows in memory."""
    import dask.array as da

    from isotropy.distributed import _graph
    from isotropy.io.shards import default_chunk_rows, read_capped_shards
    from isotropy.measure.distributed import _lazy_embeddings

    # the real limits: 8192 rows where those are no small chunks, more rows of narrow data, fewer of wide data
    assert default_chunk_rows(384, 4, 8192, 2**19) == 8192
    assert default_chunk_rows(16, 4, 8192, 2**19) == 32768 and default_chunk_rows(4, 8, 8192, 2**19) == 131072
    assert default_chunk_rows(2**20, 8, 8192, 2**19) == 8 and default_chunk_rows(4, 4) == 2**22
    for width in (4, 16, 31, 32, 64, 384):  # chunks the streaming metrics take as they are (no join in every metric)
        rows = default_chunk_rows(width, 4, _graph.NEIGHBOUR_TILE_ROWS, 2 * _graph._SMALL_CHUNK_ELEMENTS)
        lazy = da.zeros((5 * rows + 7, width), chunks=(rows, -1), dtype=np.float32)
        assert _graph.check_dask_X(lazy, caller="test") is lazy, width
    monkeypatch.setattr(_graph, "NEIGHBOUR_TILE_ROWS", 64)  # small data, the same rule
    monkeypatch.setattr(_graph, "_SMALL_CHUNK_ELEMENTS", 64)  # 128 values: 32 rows of 4, under the 64-row cap
    rng = np.random.default_rng(5)
    full = rng.normal(size=(300, 4)).astype(np.float32)
    root = tmp_path / "rows"
    root.mkdir()
    for i, start in enumerate(range(0, 300, 100)):
        np.save(root / f"part-{i}.npy", full[start:start + 100])
    assert read_shards(root).chunks[0] == (300,)  # the reader's own default: about 64 MiB
    X, names = _lazy_embeddings(root, None)
    assert X.chunks[0] == (64, 64, 64, 64, 44) and names is None
    np.testing.assert_array_equal(X.compute(), full)
    np.save(tmp_path / "one.npy", full)  # one .npy file, read by the workers too
    assert _lazy_embeddings(tmp_path / "one.npy", None)[0].chunks[0] == (64, 64, 64, 64, 44)
    np.savetxt(tmp_path / "rows.txt", full)  # a text file, read here and cut alike
    assert _lazy_embeddings(tmp_path / "rows.txt", None)[0].chunks[0] == (64, 64, 64, 64, 44)
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    for i, start in enumerate(range(0, 300, 150)):
        pd.DataFrame({"vector": list(full[start:start + 150])}).to_parquet(parquet / f"part-{i}.parquet")
    assert _lazy_embeddings(parquet, None)[0].chunks[0] == (150, 150)  # a Parquet shard is read whole
    assert read_capped_shards(root, chunk_rows=100, most_rows=64).chunks[0] == (100, 100, 100)  # asked for: as asked
    monkeypatch.setattr(_graph, "_SMALL_CHUNK_ELEMENTS", 256)  # 512 values: 128 rows of 4, above the cap
    assert _lazy_embeddings(root, None)[0].chunks[0] == (128, 128, 44)
    monkeypatch.setattr(_graph, "_SMALL_CHUNK_ELEMENTS", 64)
    result = invoke(root, "--metrics", "isoscore,twonn_dimension", "--json", tmp_path / "s.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "s.json").read_text())
    assert record["chunking"]["rows_per_chunk"] == [44, 64]
    assert record["values"]["isoscore"] == pytest.approx(isotropy.isoscore(full), rel=1e-12)
    assert record["values"]["twonn_dimension"] == pytest.approx(isotropy.twonn_dimension(full), rel=1e-12)


def test_a_bad_row_in_a_coalesced_chunk_names_its_shard(tmp_path):
    root = tmp_path / "tiny"
    root.mkdir()
    for i in range(5):
        row = np.ones((1, 3))
        if i == 3:
            row[0, 2] = np.nan
        np.save(root / f"part-{i}.npy", row)
    assert read_shards(root).chunks[0] == (5,)
    assert _error(root) == (f"Cannot read embeddings from {str(root / 'part-3.npy')!r}: a non-finite value nan at "
                            f"row 0, column 2 of the shard (row 3 of all shards); expected finite numbers "
                            f"(no NaN or inf).")


def test_npy_shards_are_opened_once_and_read_without_a_memory_map(tmp_path, monkeypatch):
    """Each .npy header is read once, when the array is built: the chunk task reads the rows with one plain read
    (no np.load, no memory map) and gives the same values, dtypes converted as before (int -> float64, float16 ->
    float32); a Fortran-ordered shard, and one rewritten after the array was built, go through np.load."""
    import isotropy.io.shards as shards_module

    rng = np.random.default_rng(5)
    parts = [rng.normal(size=(3, 4)), rng.integers(-5, 5, size=(2, 4)), rng.normal(size=(4, 4)).astype(np.float16),
             rng.normal(size=(5, 4)).astype(np.float32)]
    root = tmp_path / "mixed"
    root.mkdir()
    for k, part in enumerate(parts):
        np.save(root / f"part-{k}.npy", part)
    full = np.vstack([p.astype(np.float64) for p in parts])
    loads = []
    real = shards_module._load_npy
    monkeypatch.setattr(shards_module, "_load_npy", lambda path, mode=None: loads.append(path) or real(path, mode))
    X = read_shards(root, chunk_rows=5)  # shards split across chunks too
    assert loads == []  # headers read by np.lib.format, once
    np.testing.assert_array_equal(X.compute(), full)
    assert X.dtype == np.float64 and loads == []  # rows read by offset, no np.load
    np.save(root / "part-4.npy", np.asfortranarray(rng.normal(size=(3, 4))))
    full = np.vstack([full, np.load(root / "part-4.npy")])
    X = read_shards(root)
    assert [p.name for p in loads] == ["part-4.npy"]  # the general path, for that shard only
    np.testing.assert_array_equal(X.compute(), full)
    loads.clear()
    later = rng.normal(size=(3, 4))
    np.save(root / "part-0.npy", later.astype(np.float32))  # rewritten (another header) after the array was built
    np.testing.assert_array_equal(X.compute()[:3], later.astype(np.float32).astype(np.float64))
    assert "part-0.npy" in [p.name for p in loads]


def test_each_parquet_shard_is_checked_for_expansion_once_before_its_first_row(tmp_path, monkeypatch):
    """read_shards ran the Parquet expansion check on each shard, then again on the one-row copy it reads the dtype
    from, and again when the chunk was computed: once per shard now, before any of its rows is read. A shard
    rewritten after the array was built is checked again before it is read (a bomb put there is refused)."""
    import os
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    import isotropy.io.embeddings as embeddings_module
    import isotropy.io.shards as shards_module

    rng = np.random.default_rng(7)
    parts = [rng.normal(size=(n, 3)) for n in (4, 6, 5)]
    root = tmp_path / "pq"
    root.mkdir()
    for k, part in enumerate(parts):
        pd.DataFrame({"vector": list(part)}).to_parquet(root / f"part-{k}.parquet")
    np.save(root / "part-3.npy", parts[0])
    events = []
    real_check, real_read = embeddings_module._check_parquet_expansion, pd.read_parquet

    def check(path):
        events.append(("check", Path(str(path)).name))
        return real_check(path)

    class OpenedFile(pq.ParquetFile):  # the header's first row is read through it
        def __init__(self, source, *args, **kwargs):
            events.append(("read", Path(str(source)).name))
            super().__init__(source, *args, **kwargs)

    def read_parquet(path, *args, **kwargs):  # a chunk's rows are read through it
        events.append(("read", Path(str(path)).name))
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(embeddings_module, "_check_parquet_expansion", check)
    monkeypatch.setattr(shards_module, "_check_parquet_expansion", check)
    monkeypatch.setattr(pq, "ParquetFile", OpenedFile)
    monkeypatch.setattr(pd, "read_parquet", read_parquet)
    X = read_shards(root, chunk_rows=5)
    np.testing.assert_array_equal(X.compute(), np.vstack([*parts, parts[0]]))
    names = [f"part-{k}.parquet" for k in range(3)]
    assert [name for kind, name in events if kind == "check"] == names  # was each twice, then again computed
    for name in names:  # each checked before its first row is read
        assert events.index(("check", name)) < events.index(("read", name))

    events.clear()
    later = rng.normal(size=(6, 3))
    pd.DataFrame({"vector": list(later)}).to_parquet(root / "part-1.parquet")
    os.utime(root / "part-1.parquet", ns=(os.stat(root / "part-1.parquet").st_mtime_ns + 10**9,) * 2)
    np.testing.assert_array_equal(X.compute()[4:10], later)  # rewritten after the array was built: checked again
    assert [name for kind, name in events if kind == "check"] == ["part-1.parquet"]
    assert events.index(("check", "part-1.parquet")) < events.index(("read", "part-1.parquet"))

    block = pa.table({"a": np.zeros(2**20)})  # 9 row groups of 2**20 zeros: far more decoded than the file holds
    with pq.ParquetWriter(root / "part-2.parquet", block.schema, compression="zstd") as writer:
        for _ in range(9):
            writer.write_table(block)
    with pytest.raises(IsotropyValueError, match=r"part-2\.parquet.* expands from \d+ to \d+ bytes"):
        X.compute()


@pytest.mark.parametrize("value, error, got", [
    (0, IsotropyValueError, "0"), (-3, IsotropyValueError, "-3"), (2.5, IsotropyValueError, "2.5"),
    (True, IsotropyValueError, "True"), ("5", TypeError, "'5'"),
])
def test_chunk_rows_out_of_range_is_a_value_error_like_every_range(shards, value, error, got):
    # chunk_rows=0 raised TypeError; the library's range check now says it, as for batch_size or n_neighbors
    root, _, _ = shards
    with pytest.raises(error) as info:
        read_shards(root, chunk_rows=value)
    assert str(info.value) == (f"The 'chunk_rows' parameter of read_shards must be an int in the range [1, inf) or "
                               f"None. Got {got} instead.")
    assert read_shards(root, chunk_rows=np.int64(20)).chunks[0][0] == 20


def test_a_shard_that_is_not_npy_says_so_not_pickled(shards):
    # it read "not a readable .npy array (This file contains pickled (object) data. If you trust ... ke...)"
    root, _, _ = shards
    (root / "part-4.npy").write_bytes(b"hello")
    line = (f"Cannot read embeddings from {str(root / 'part-4.npy')!r}: not a .npy file (it does not start with "
            f"numpy's magic string \\x93NUMPY but with b'hello'); expected a numeric .npy array.")
    assert _error(root) == line
    result = invoke(root, "--workers", 2, "--metrics", "isoscore")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"Error: {line}"]


def test_a_bad_row_of_one_file_or_zarr_array_is_named_without_shard_wording(tmp_path):
    # measure nan.npy --workers 2 said "row 3, column 1 of the shard (row 3 of all shards)" for a single file
    import dask.array as da
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.random.default_rng(0).normal(size=(10, 3))
    X[3, 1] = np.nan
    np.save(tmp_path / "nan.npy", X)
    # a float NaN as pyarrow stores it (pandas' to_parquet would store a null: refused as a missing value instead,
    # tests/test_io_parquet_nulls.py)
    pq.write_table(pa.table({"vector": pa.array(X.tolist(), pa.list_(pa.float64()))}), tmp_path / "nan.parquet")
    da.to_zarr(da.from_array(X, chunks=(2, 3)), str(tmp_path / "nan.zarr"))
    for name in ("nan.npy", "nan.parquet", "nan.zarr"):
        assert _error(tmp_path / name, chunk_rows=2) == (
            f"Cannot read embeddings from {str(tmp_path / name)!r}: a non-finite value nan at row 3, column 1; "
            f"expected finite numbers (no NaN or inf).")
    result = invoke(tmp_path / "nan.npy", "--workers", 2, "--metrics", "isoscore")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        (f"Error: Cannot read embeddings from {str(tmp_path / 'nan.npy')!r}: a non-finite value nan at row 3, "
         f"column 1; expected finite numbers (no NaN or inf).")]


def test_a_shard_directory_with_shards_in_sub_directories_warns_that_they_are_not_read(tmp_path):
    from click.testing import CliRunner

    from isotropy.cli import cli
    from isotropy.io.shards import read_shards

    rng = np.random.default_rng(0)
    top = tmp_path / "d"
    (top / "year=2024" / "month=01").mkdir(parents=True)
    (top / ".cache").mkdir()
    parts = {"a.npy": 30, "year=2024/month=01/b.npy": 20}
    for name, rows in parts.items():
        np.save(top / name, rng.normal(size=(rows, 4)).astype(np.float32))
    np.save(top / ".cache" / "c.npy", rng.normal(size=(20, 4)).astype(np.float32))  # hidden: not looked in
    pattern = str(top / "**" / "*.npy")
    expected = (f"The shard directory {str(top)!r} has sub-directories with shards ('year=2024') that are not read: "
                f"only its own .npy and .parquet files are. To read every shard under it, its own included, give the "
                f"pattern {pattern!r}.")
    with pytest.warns(UserWarning) as caught:
        X = read_shards(top)
    assert [str(w.message) for w in caught] == [expected] and X.shape == (30, 4)  # two levels down: still found
    assert read_shards(pattern).shape == (50, 4)  # the advice reads every shard, the top one included
    result = CliRunner().invoke(cli, ["measure", str(top), "--metrics", "isoscore"])
    assert result.exit_code == 0, result.output
    assert f"Warning: {expected}" in result.stderr.splitlines() and ": 30 samples x 4 features" in result.output
    # no shard at the top: the command's error comes with the warning that says where the shards are
    (top / "a.npy").unlink()
    result = CliRunner().invoke(cli, ["measure", str(top), "--metrics", "isoscore"])
    assert result.exit_code == 2 and f"Warning: {expected}" in result.stderr.splitlines()
    assert "no .npy or .parquet shards found there" in result.stderr.splitlines()[-1]


def test_the_sub_directory_warning_is_one_line_with_json_too(tmp_path):
    # with --json, the check that the JSON overwrites no shard listed the shards first: the warning escaped as Python's
    # "command.py:51: UserWarning: ... shards = _shard_paths(embeddings)" before the command's own Warning: line
    import warnings

    rng = np.random.default_rng(0)
    top = tmp_path / "d"
    (top / "year=2024").mkdir(parents=True)
    np.save(top / "a.npy", rng.normal(size=(30, 4)))
    np.save(top / "year=2024" / "b.npy", rng.normal(size=(20, 4)))
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        result = CliRunner().invoke(cli, ["measure", str(top), "--metrics", "isoscore", "--json",
                                          str(tmp_path / "out.json")])
    assert result.exit_code == 0, result.output
    assert [str(w.message) for w in escaped if issubclass(w.category, UserWarning)] == []
    assert [line for line in result.stderr.splitlines() if "sub-directories" in line] == [
        (f"Warning: The shard directory {str(top)!r} has sub-directories with shards ('year=2024') that are not read: "
         f"only its own .npy and .parquet files are. To read every shard under it, its own included, give the pattern "
         f"{str(top / '**' / '*.npy')!r}.")]
    assert json.loads((tmp_path / "out.json").read_text())["n_samples"] == 30


def test_numbered_shards_are_read_in_their_numbers_order(tmp_path):
    # plain string order read part-0, part-1, part-10, part-11, part-2, ...: a labels file written in the shards'
    # numbered order then lined up with the wrong rows, without a word
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(k + 2, 3)) for k in range(12)]
    for k, part in enumerate(parts):
        np.save(tmp_path / f"part-{k}.npy", part)
    expected = np.concatenate(parts)
    np.testing.assert_array_equal(read_shards(tmp_path).compute(), expected)
    np.testing.assert_array_equal(read_shards(str(tmp_path / "part-*.npy")).compute(), expected)


def test_shards_without_rows_are_skipped_with_one_warning(tmp_path):
    # a writer's empty partitions (Spark leaves them) aborted the whole read
    from isotropy.io.shards import read_shards

    rng = np.random.default_rng(0)
    first, last = rng.normal(size=(40, 5)), rng.normal(size=(30, 5))
    np.save(tmp_path / "part-0.npy", first)
    np.save(tmp_path / "part-1.npy", np.empty((0, 5)))
    pd.DataFrame({"vector": pd.Series([], dtype=object)}).to_parquet(tmp_path / "part-2.parquet")
    np.save(tmp_path / "part-3.npy", last)
    with pytest.warns(UserWarning, match=r"^2 shards without rows skipped \('part-1\.npy', 'part-2\.parquet'\)\.$"):
        X = read_shards(tmp_path)
    np.testing.assert_array_equal(X.compute(), np.concatenate([first, last]))
    np.save(tmp_path / "part-4.npy", np.empty((0, 4)))  # another data set's width: refused, not skipped
    with pytest.raises(IsotropyValueError, match=r"'.*part-4\.npy': the shard has no rows and 4 features \(columns\), "
                                                 r"but 'part-0\.npy' has 5; expected shards of one width\.$"):
        read_shards(tmp_path)
    for path in tmp_path.glob("part-[03]*"):
        path.unlink()
    (tmp_path / "part-4.npy").unlink()
    with pytest.raises(IsotropyValueError, match=r"none of the 2 shards has rows; expected at least one row"):
        read_shards(tmp_path)


_READS: list = []  # the chunks _counting_load read (module level: the task is pickled by reference to this module)


def _counting_load(group, *args, **kwargs):
    _READS.append(len(group))
    return _ORIGINAL_LOAD(group, *args, **kwargs)


@pytest.mark.parametrize("hold", [True, False])
def test_a_small_input_is_read_once_for_every_metric_of_the_table(tmp_path, monkeypatch, hold):
    """On a cluster, an input within the hold budget is read once and held by the workers: each metric's graph read
    every shard again before (1,500 one-row shards: 1.64x the same rows in one file with --workers 2, against 1.2x
    read once). Above the budget each metric reads it again, a chunk per task, as before; the values are the same.
    The cluster runs in this process (threads) so that the reads can be counted."""
    from distributed import LocalCluster

    from isotropy.io import shards as shards_module
    from isotropy.measure import distributed as measure_distributed

    X = np.random.default_rng(4).normal(size=(60, 6))
    (tmp_path / "parts").mkdir()
    for i, row in enumerate(X):
        np.save(tmp_path / "parts" / f"part-{i}.npy", row[None])
    np.save(tmp_path / "full.npy", X)
    reads = _READS
    reads.clear()
    monkeypatch.setattr(shards_module, "_load_group", _counting_load)
    if not hold:
        monkeypatch.setattr(measure_distributed, "_HOLD_BYTES", 0)
    metrics = "isoscore,participation_ratio,twonn_dimension,mle_dimension"
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1, protocol="tcp://",
                      dashboard_address=None) as cluster:
        result = invoke(tmp_path / "parts", "--scheduler", cluster.scheduler_address, "--metrics", metrics,
                        "--json", tmp_path / "s.json")
    assert result.exit_code == 0, result.output
    memory = invoke(tmp_path / "full.npy", "--metrics", metrics, "--json", tmp_path / "m.json")
    assert memory.exit_code == 0, memory.output
    s, m = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("s", "m"))
    for name, value in m["values"].items():
        assert s["values"][name] == pytest.approx(value, rel=1e-10), name
    assert s["chunking"]["n_chunks"] == 1 and s["chunking"]["held_by_workers"] is hold
    assert set(reads) == {60}  # each read is the one chunk of all 60 shards
    assert len(reads) == 1 if hold else len(reads) >= 3  # the covariance metrics and the neighbour pass each read it


def test_nothing_is_held_without_one_known_memory_limit_or_beyond_a_quarter_of_it():
    """Workers of differing or no limits (a --scheduler cluster) give no budget: nothing is held there."""
    import dask.array as da

    from isotropy.measure.distributed import _hold

    X = da.zeros((10, 3), chunks=(5, 3))  # 240 bytes
    assert _hold(X, {"workers": 2, "memory_limit": None}) is None
    assert _hold(X, {"workers": None, "memory_limit": 10**9}) is None
    assert _hold(X, {"workers": 2, "memory_limit": 478}) is None  # a quarter of 2 x 478 bytes is 239 < 240
    held = _hold(X, {"workers": 2, "memory_limit": 480})
    assert held is not None and np.array_equal(held.compute(), np.zeros((10, 3)))


def test_a_zarr_group_is_read_by_key_and_refused_without_one_naming_its_arrays(tmp_path):
    """A group gave zarr's own "Invalid value for 'node_type'. Expected 'array'. Got 'group'." (a user trial)."""
    import dask.array as da

    X = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    da.to_zarr(da.from_array(X, chunks=(20, 4)), str(tmp_path / "g.zarr"), component="emb")  # zarr 2 and 3 alike
    da.to_zarr(da.arange(50, chunks=20), str(tmp_path / "g.zarr"), component="ids")
    np.testing.assert_array_equal(read_shards(tmp_path / "g.zarr", key="emb").compute(), X)
    with pytest.raises(ValueError) as info:
        read_shards(tmp_path / "g.zarr")
    assert str(info.value) == (f"Cannot read embeddings from {str(tmp_path / 'g.zarr')!r}: the Zarr store is a group "
                               f"and holds the arrays 'emb', 'ids'; expected --key (key=) naming the array to measure.")
    with pytest.raises(ValueError) as info:
        read_shards(tmp_path / "g.zarr", key="embs")
    assert str(info.value).endswith("the Zarr group has no array 'embs' and holds the arrays 'emb', 'ids'; expected "
                                    "--key (key=) naming one of them. Did you mean 'emb'?")


def test_a_key_given_for_a_zarr_array_says_it_holds_a_single_array(tmp_path):
    """--key on a Zarr array (not a group) gave zarr's "No array found in store <FsspecStore(AsyncFileSystemWrapper,
    ...)> at path emb" (a user trial): now the words of .npy shards given a key."""
    import dask.array as da

    X = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    da.to_zarr(da.from_array(X, chunks=(20, 4)), str(tmp_path / "x.zarr"))  # zarr 2 and 3 alike
    with pytest.raises(ValueError) as info:
        read_shards(tmp_path / "x.zarr", key="emb")
    assert str(info.value) == (f"Cannot read embeddings from {str(tmp_path / 'x.zarr')!r}: key='emb' was given but "
                               f"the Zarr store is a single array; expected no key with a Zarr array (--key names an "
                               f"array of a Zarr group).")
    np.testing.assert_array_equal(read_shards(tmp_path / "x.zarr").compute(), X)  # without it: read as before


@pytest.mark.parametrize("rows", [10, 30])
def test_a_npy_shard_rewritten_with_other_rows_is_refused(tmp_path, rows):
    """Rewritten after read_shards with other rows, a .npy shard was read as it is now: 30 rows of an array of 40
    (a metric's value of neither data set) or the first 20 of 30 (a user trial). Refused, naming the shard; a rewrite
    with the same rows is read as before (the test above)."""
    from isotropy.io.embeddings import EmbeddingsReadError

    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.normal(size=(20, 4)))
    np.save(tmp_path / "b.npy", rng.normal(size=(20, 4)))
    X = read_shards(tmp_path)
    np.save(tmp_path / "b.npy", rng.normal(size=(rows, 4)) + 1)
    with pytest.raises(EmbeddingsReadError, match=rf"b.npy': it holds {rows} rows now, not the 20 it had when the array "
                                                  r"was built \(it changed since\)"):
        isotropy.cosine_similarity_mean(X)


@pytest.mark.parametrize("n_copies", [2, 3])
def test_a_default_table_of_shards_on_too_few_distinct_points_leaves_mle_out(tmp_path, n_copies):
    """The default table of a folder of shards on too few distinct points for MLE's default k leaves MLE out with a
    note, as in memory (``tests/test_measure_cli.py``, which holds the checks and the scikit-dimension reference)."""
    from test_measure_cli import check_too_few_distinct_default_table

    check_too_few_distinct_default_table(tmp_path, n_copies, sharded=True)


def test_relative_shard_paths_are_read_by_workers_started_elsewhere(tmp_path):
    """A trial: with --scheduler, a relative EMBEDDINGS path was read by the workers from their own working
    directory, where no such file was ("No such file or directory: 'shards/part-0.npy'"). The pieces now go to the
    workers as absolute paths: the same values as in memory. The workers here run in another directory than the
    command (this test's own, against tmp_path)."""
    import subprocess
    import sys

    from distributed import LocalCluster

    X = np.random.default_rng(5).normal(size=(90, 6))
    (tmp_path / "shards").mkdir()
    for i in range(3):
        np.save(tmp_path / "shards" / f"part-{i}.npy", X[30 * i:30 * (i + 1)])
    assert Path.cwd() != tmp_path
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        out = subprocess.run([sys.executable, "-m", "isotropy", "measure", "shards", "--scheduler",
                              cluster.scheduler_address, "--metrics", "isoscore,participation_ratio", "--json", "-"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["file"] == "shards"  # as given
    from isotropy import isoscore, participation_ratio

    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-10)
    assert record["values"]["participation_ratio"] == pytest.approx(participation_ratio(X), rel=1e-10)


def test_the_cluster_indices_conventions_are_said_on_dask_as_in_memory():
    """Calinski-Harabasz's 1.0 and Davies-Bouldin's 0.0 for degenerate clusters (scikit-learn's conventions) come with
    the in-memory warning on a dask array too, and the same values."""
    import dask.array as da

    labels = np.arange(20) % 2
    same = da.from_array(np.ones((20, 3)), chunks=(7, 3))
    with pytest.warns(UserWarning, match=r"^calinski_harabasz_score: every cluster is one point repeated \(no spread "
                                         r"within clusters\), so the index divides by 0; 1 by scikit-learn's"):
        assert isotropy.calinski_harabasz_score(same, labels) == 1.0
    with pytest.warns(UserWarning, match=r"^davies_bouldin_score: every cluster has the same centroid"):
        assert isotropy.davies_bouldin_score(same, labels) == 0.0


def test_a_nan_in_a_shard_given_by_a_relative_path_is_named_by_that_path(tmp_path, monkeypatch):
    # the task reads the shard by its absolute path (a worker's working directory may be another): its NaN was named
    # by that path, where every other shard error names the path as given (a user trial)
    from isotropy.io.embeddings import EmbeddingsReadError

    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).normal(size=(100, 4))
    X[57, 2] = np.nan
    Path("shards").mkdir()
    np.save("shards/p0.npy", X[:50])
    np.save("shards/p1.npy", X[50:])
    with pytest.raises(EmbeddingsReadError) as caught:
        read_shards("shards").compute()
    assert str(caught.value) == ("Cannot read embeddings from 'shards/p1.npy': a non-finite value nan at row 7, column "
                                 "2 of the shard (row 57 of all shards); expected finite numbers (no NaN or inf).")
