"""Fuzz suite for the readers (issue 11): random bytes, truncated files and lying headers.

For every input a reader must either return the right array (the one written, or for a file cut
at a line boundary of a text format, its first rows) or refuse with one line: a ``ValueError``
(``IsotropyValueError``) or ``FileNotFoundError``, never another exception, never wrong numbers.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from _fuzz import spliced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels
from isotropy.io.word_vectors import read_word_vectors

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EMBEDDING_SUFFIXES = [".npy", ".npz", ".txt", ".vec", ".bin", ".csv", ".tsv", ".pt", ".safetensors", ".parquet",
                      ".vec.gz", ".bin.gz"]
LABEL_SUFFIXES = [".txt", ".csv", ".tsv", ".npy", ".npz", ".pt", ".pth", ".safetensors"]


def _read(path, reader=read_embeddings, **kwargs):
    """('ok', result) or ('refused', message); any other exception fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", reader(path, **kwargs)
        except (ValueError, FileNotFoundError) as exc:
            message = str(exc)
            assert "\n" not in message.strip() and len(message) < 800, message
            return "refused", message


@st.composite
def matrices(draw):
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    values = draw(st.lists(st.integers(-999, 999), min_size=n * d, max_size=n * d))
    return (np.array(values, dtype=np.float64).reshape(n, d) / 8.0).astype(np.float32)  # exact in float32


def _encode(X, suffix, tmp_path):
    """Write X in the format of ``suffix``; return the bytes and the row names written (or None)."""
    path = tmp_path / f"src{suffix}"
    names = None
    if suffix.endswith(".gz"):  # word vectors, gzip-compressed (decompressed by the reader into a temporary file)
        import gzip

        data, names = _encode(X, suffix.removesuffix(".gz"), tmp_path)
        return gzip.compress(data, mtime=0), names
    if suffix == ".npy":
        np.save(path, X)
    elif suffix == ".npz":
        np.savez(path, X=X)
    elif suffix in (".csv", ".tsv"):
        sep = "," if suffix == ".csv" else "\t"
        path.write_text("".join(sep.join(repr(float(v)) for v in row) + "\n" for row in X))
    elif suffix in (".txt", ".vec"):
        names = [f"w{i}" for i in range(len(X))]
        path.write_text(f"{X.shape[0]} {X.shape[1]}\n" + "".join(
            f"{w} " + " ".join(repr(float(v)) for v in row) + "\n" for w, row in zip(names, X)))
    elif suffix == ".bin":
        names = [f"w{i}" for i in range(len(X))]
        path.write_bytes(f"{X.shape[0]} {X.shape[1]}\n".encode() + b"".join(
            f"{w} ".encode() + row.astype("<f4").tobytes() + b"\n" for w, row in zip(names, X)))
    elif suffix == ".pt":
        import torch

        torch.save(torch.from_numpy(X), path)
    elif suffix == ".safetensors":
        from safetensors.numpy import save_file

        save_file({"X": X}, str(path))
    elif suffix == ".parquet":
        import pandas as pd

        pd.DataFrame({"vector": list(X)}).to_parquet(path)
    return path.read_bytes(), names


def _check_ok(result, X, names, *, prefix_allowed):
    got, got_names = result
    assert got.ndim == 2 and got.dtype.kind == "f"
    if prefix_allowed and got.shape[0] < X.shape[0]:
        X = X[: got.shape[0]]
        names = None if names is None else names[: got.shape[0]]
    np.testing.assert_array_equal(got, X)
    if names is not None:
        assert got_names == names


@SETTINGS
@given(X=matrices(), suffix=st.sampled_from(EMBEDDING_SUFFIXES))
def test_round_trip(tmp_path_factory, X, suffix):
    tmp = tmp_path_factory.mktemp("rt")
    data, names = _encode(X, suffix, tmp)
    path = tmp / f"x{suffix}"
    path.write_bytes(data)
    kind, result = _read(path)
    assert kind == "ok", result
    _check_ok(result, X, names, prefix_allowed=False)
    if suffix in (".npy", ".npz", ".pt", ".safetensors", ".parquet"):  # binary formats: also without the extension
        (tmp / "x").write_bytes(data)
        kind, result = _read(tmp / "x")
        assert kind == "ok", result
        _check_ok(result, X, names, prefix_allowed=False)


@SETTINGS
@given(X=matrices(), suffix=st.sampled_from(EMBEDDING_SUFFIXES), cut=st.floats(0.0, 0.999))
def test_truncated_files_are_refused_or_a_prefix(tmp_path_factory, X, suffix, cut):
    tmp = tmp_path_factory.mktemp("cut")
    data, names = _encode(X, suffix, tmp)
    path = tmp / f"x{suffix}"
    cut_data = data[: int(len(data) * cut)]
    path.write_bytes(cut_data)
    kind, result = _read(path)
    if kind == "ok":  # only text formats may still be read: each complete line as written
        assert suffix in (".csv", ".tsv", ".txt", ".vec"), (suffix, result)
        got, got_names = result
        # a last line without its newline is whatever its bytes say (a file may lack the final newline)
        complete = cut_data.count(b"\n") - (1 if suffix in (".txt", ".vec") else 0)
        assert got.shape[0] <= X.shape[0] and complete <= got.shape[0]
        np.testing.assert_array_equal(got[:complete], X[:complete])
        if names is not None:
            assert got_names[:complete] == names[:complete]


@SETTINGS
@given(X=matrices(), suffix=st.sampled_from([".txt", ".vec", ".bin"]), dn=st.integers(-3, 3), dd=st.integers(-3, 3))
def test_lying_word2vec_headers_are_refused(tmp_path_factory, X, suffix, dn, dd):
    tmp = tmp_path_factory.mktemp("lie")
    data, names = _encode(X, suffix, tmp)
    n, d = X.shape
    _, _, rest = data.partition(b"\n")
    path = tmp / f"x{suffix}"
    path.write_bytes(f"{max(n + dn, 0)} {max(d + dd, 0)}\n".encode() + rest)
    kind, result = _read(path)
    if (max(n + dn, 0), max(d + dd, 0)) != (n, d):
        assert kind == "refused", (suffix, n, d, dn, dd, result)
    else:
        _check_ok(result, X, names, prefix_allowed=False)


@SETTINGS
@given(data=st.binary(max_size=300), suffix=st.sampled_from(EMBEDDING_SUFFIXES + [".w2v", ""]),
       header=st.sampled_from([b"", b"3 2\n", b"\x93NUMPY", b"PK\x03\x04", b"PAR1", b"w,a\n", b"\x1f\x8b",
                                    b"\x20\x00\x00\x00\x00\x00\x00\x00{"]))
def test_random_bytes_never_crash(tmp_path_factory, data, suffix, header):
    path = tmp_path_factory.mktemp("rnd") / f"x{suffix}"
    path.write_bytes(header + data)
    kind, result = _read(path)
    if kind == "ok":
        X, names = result
        assert X.ndim == 2 and X.dtype.kind == "f" and X.shape[0] >= 1
        assert names is None or len(names) == X.shape[0]


@SETTINGS
@given(data=st.binary(max_size=200), suffix=st.sampled_from(LABEL_SUFFIXES), n_rows=st.integers(1, 8))
def test_labels_random_bytes_never_crash(tmp_path_factory, data, suffix, n_rows):
    path = tmp_path_factory.mktemp("lab") / f"y{suffix}"
    path.write_bytes(data)
    kind, result = _read(path, read_labels, n_rows=n_rows)
    if kind == "ok":
        assert result.shape[0] == n_rows


@SETTINGS
@given(labels=st.lists(st.sampled_from(["a", "b", "0", "1", "pos", "7"]), min_size=2, max_size=8),
       header=st.sampled_from([None, "label", "class"]), stray=st.sampled_from([None, "x", "0"]))
def test_labels_never_shift(tmp_path_factory, labels, header, stray):
    path = tmp_path_factory.mktemp("shift") / "y.csv"
    lines = ([header] if header else []) + labels + ([stray] if stray else [])
    path.write_text("\n".join(lines) + "\n")
    kind, result = _read(path, read_labels, n_rows=len(labels))
    if stray is not None:
        assert kind == "refused"  # one line too many: an error, never a shift
    else:
        assert kind == "ok" and result.tolist() == labels


def test_npy_header_lies_about_shape(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.arange(6, dtype=np.float32).reshape(3, 2))
    data = buffer.getvalue().replace(b"(3, 2)", b"(9, 2)")
    (tmp_path / "x.npy").write_bytes(data)
    kind, message = _read(tmp_path / "x.npy")
    assert kind == "refused" and "x.npy" in message
    with pytest.raises(ValueError):
        read_embeddings(tmp_path / "x.npy", mmap_mode="r")


# gzipped word2vec binary with a limit: parsed as it decompresses, the first `limit` records only


def _bin_gz(X, tmp_path, *, padded: bool = False):
    """The bytes of X as a gzipped word2vec binary file, its words, and how many of its first bytes hold X's records.

    ``padded``: X's records, flushed (the compressed bytes end there), then 20,000 vectors of zeros (words z0, z1,
    ...): the file decompresses to well past the reader's buffers, which then stop before the stream's end."""
    import gzip
    import zlib

    data, names = _encode(X, ".bin", tmp_path)
    if not padded:
        packed = gzip.compress(data, mtime=0)
        return packed, names, len(packed)
    n, d = X.shape
    pad = [f"z{i}" for i in range(20_000)]
    data = f"{n + len(pad)} {d}".encode() + data[data.index(b"\n"):]
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    head = compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.compress(b"".join(f"{w} ".encode() + bytes(4 * d) + b"\n" for w in pad)) + compressor.flush()
    return head + tail, names + pad, len(head)


def _gzip_decoded(data: bytes) -> bytes:
    """Every byte Python's gzip decoder yields from ``data`` before it stops (its end, or damage it sees): the
    compressed bytes fed one at a time, so that no output is lost with the call that meets the damage (zlib's
    own gzip decoder is stricter about the header than Python's, which the reader uses)."""
    import gzip
    import zlib

    class OneByte(io.RawIOBase):
        def __init__(self):
            self.position = 0

        def readable(self):
            return True

        def read(self, size=-1):  # the magic number whole (gzip reads it with one read(2)), then a byte a time
            taken = data[self.position:self.position + (2 if self.position == 0 else 1)]
            self.position += len(taken)
            return taken

    decoded = bytearray()
    try:
        with gzip.GzipFile(fileobj=OneByte()) as source:
            while chunk := source.read(1):
                decoded += chunk
    except (OSError, EOFError, zlib.error):
        pass
    return bytes(decoded)


def _first_records(decoded: bytes, limit: int):
    """The header's word count and the first ``limit`` words and vectors of word2vec binary bytes, parsed here (the
    test's own reading of the format: '<n> <d>' line, then per word: its bytes up to a space, line breaks left out,
    and d little-endian float32)."""
    head, _, rest = decoded.partition(b"\n")
    n_words, dim = (int(count) for count in head.split())
    words, rows, at = [], [], 0
    for _ in range(min(limit, n_words)):
        space = rest.index(b" ", at)
        words.append(rest[at:space].replace(b"\n", b"").decode("utf-8", errors="replace"))
        row = rest[space + 1:space + 1 + 4 * dim]
        assert len(row) == 4 * dim
        rows.append(np.frombuffer(row, dtype="<f4"))
        at = space + 1 + 4 * dim
    return n_words, words, np.array(rows, dtype=np.float32).reshape(len(rows), dim)


@SETTINGS
@given(X=matrices(), limit=st.integers(1, 8), cut=st.floats(0.0, 0.999), padded=st.booleans())
def test_truncated_gzipped_binary_with_a_limit_is_refused_or_its_first_words(tmp_path_factory, X, limit, cut, padded):
    """A gzip stream cut short yields a prefix of the file: its first `limit` words as written, or a refusal; a limit
    that reaches the header's count reads the stream to its (missing) end: a refusal."""
    tmp = tmp_path_factory.mktemp("bgzcut")
    data, names, _ = _bin_gz(X, tmp, padded=padded)
    path = tmp / "x.bin.gz"
    path.write_bytes(data[: int(len(data) * cut)])
    kind, result = _read(path, read_word_vectors, limit=limit, binary=True)
    if kind == "ok":
        assert limit < len(names), result
        words, got = result
        assert words == names[:limit]
        np.testing.assert_array_equal(got, np.vstack([X, np.zeros((len(names) - len(X), X.shape[1]))])[:limit])
    else:
        assert result.startswith(f"{str(path)!r} "), result


@SETTINGS
@given(X=matrices(), limit=st.integers(1, 8), bit=st.integers(0, 2**20), padded=st.booleans())
def test_bit_flipped_gzipped_binary_with_a_limit_is_refused_or_what_it_decodes_to(tmp_path_factory, X, limit, bit,
                                                                                   padded):
    """One bit flipped in a .bin.gz (padded: in the bytes of its first records): a one-line refusal, or exactly the
    words and vectors of the bytes the damaged stream decodes to. A flip inside the records read goes unseen by gzip
    when the reader stops before the stream's checksum (a limit below the header's count, a file longer than the
    reader's buffers); a reader that reads to the end returns the file as written or refuses it."""
    tmp = tmp_path_factory.mktemp("bgzflip")
    data, names, head = _bin_gz(X, tmp, padded=padded)
    flipped = bytearray(data)
    position = bit % (8 * head)
    flipped[position // 8] ^= 1 << (position % 8)
    path = tmp / "x.bin.gz"
    path.write_bytes(bytes(flipped))
    kind, result = _read(path, read_word_vectors, limit=limit, binary=True)
    if kind == "refused":
        assert result.startswith(f"{str(path)!r} "), result
        return
    words, got = result
    n_decoded, expected_words, expected = _first_records(_gzip_decoded(bytes(flipped)), limit)
    assert words == expected_words
    np.testing.assert_array_equal(got, expected)
    if limit >= n_decoded:  # read to the end, checksum included: only a flip gzip ignores (a header field) reads
        assert words == names
        np.testing.assert_array_equal(got, X)


@SETTINGS
@given(X=matrices(), limit=st.integers(1, 8))
def test_gzipped_binary_with_a_limit_round_trip(tmp_path_factory, X, limit):
    tmp = tmp_path_factory.mktemp("bgzrt")
    data, names, _ = _bin_gz(X, tmp)
    path = tmp / "x.bin.gz"
    path.write_bytes(data)
    words, got = read_word_vectors(path, limit=limit)
    assert words == names[:limit]
    np.testing.assert_array_equal(got, X[:limit])


# Parquet embeddings holding a null or a NaN: read again by pyarrow to tell them apart (embeddings._first_null)


def _parquet_gap(path, X, cell: int, *, null: bool, layout: str) -> bytes:
    """X written by pyarrow with one cell a null or a float NaN, one column per feature or one column of vectors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = X.astype(np.float64).tolist()
    i, j = divmod(cell % X.size, X.shape[1])
    rows[i][j] = None if null else float("nan")
    if layout == "scalar":
        table = pa.table({f"f{j}": pa.array([row[j] for row in rows], pa.float64()) for j in range(X.shape[1])})
    else:
        size = X.shape[1] if layout == "fixed_size_list" else -1
        table = pa.table({"emb": pa.array(rows, pa.list_(pa.float64(), size))})
    pq.write_table(table, path, row_group_size=2)
    return path.read_bytes()


def _shards_of(path):
    from isotropy.io.shards import read_shards

    return read_shards(path).compute(), None


@SETTINGS
@given(X=matrices(), cell=st.integers(0, 99), null=st.booleans(),
       layout=st.sampled_from(["scalar", "list", "fixed_size_list"]), how=st.sampled_from(["flip", "cut", "splice"]),
       at=st.integers(0, 2**20), data=st.binary(min_size=1, max_size=40))
def test_damaged_parquet_with_a_null_or_a_nan_is_refused_or_read(tmp_path_factory, X, cell, null, layout, how, at,
                                                                 data):
    """A bit flipped, a cut or bytes inserted in a Parquet file holding a null or a NaN: a one-line refusal naming the
    file, or an array of the shape written (Parquet pages carry no checksum: a flipped value bit reads as a value)."""
    tmp = tmp_path_factory.mktemp("pgap")
    valid = _parquet_gap(tmp / "src.parquet", X, cell, null=null, layout=layout)
    if how == "flip":
        damaged = bytearray(valid)
        damaged[(at // 8) % len(valid)] ^= 1 << (at % 8)
    else:
        damaged = valid[: at % len(valid)] if how == "cut" else spliced(valid, data)
    path = tmp / "x.parquet"
    path.write_bytes(bytes(damaged))
    for reader in (read_embeddings, _shards_of):
        kind, result = _read(path, reader)
        if kind == "refused":
            assert result.startswith(f"Cannot read embeddings from {str(path)!r}: "), result
        else:
            assert result[0].shape == X.shape


def _labels_read_or_refused(path, n_rows, column, *, ndim=None):
    """``read_labels`` of bytes that may be anything: ``n_rows`` labels, or a one-line refusal naming the file."""
    kind, result = _read(path, read_labels, n_rows=n_rows, column=column)
    if kind == "ok":
        assert result.shape[0] == n_rows and (ndim is None or result.ndim == ndim)
    else:
        assert result.startswith(f"Cannot read labels from {str(path)!r}: ")


def _labels_refused(path, n_rows, column):
    """``read_labels`` of a file cut short: a one-line refusal naming the file, never labels."""
    kind, result = _read(path, read_labels, n_rows=n_rows, column=column)
    assert kind == "refused", result
    assert result.startswith(f"Cannot read labels from {str(path)!r}: ")


# labels in a .parquet file (read_labels reads one column of it)


def _parquet_labels(path, labels, *, vectors: bool = False, other: bool = False):
    import pandas as pd

    frame = pd.DataFrame({"label": labels})
    if vectors:  # a table of vectors and labels: the label column is the only one without vectors
        frame.insert(0, "emb", [np.full(2, float(i)) for i in range(len(labels))])
    if other:
        frame["text"] = [f"t{i}" for i in range(len(labels))]
    frame.to_parquet(path)
    return path.read_bytes()


@SETTINGS
@given(data=st.binary(max_size=300), tail=st.sampled_from([b"", b"PAR1", b"\x08\x00\x00\x00PAR1"]),
       column=st.sampled_from([None, "label"]), n_rows=st.integers(1, 8))
def test_parquet_labels_random_bytes_never_crash(tmp_path_factory, data, tail, column, n_rows):
    path = tmp_path_factory.mktemp("plab") / "y.parquet"
    path.write_bytes(b"PAR1" + data + tail)
    _labels_read_or_refused(path, n_rows, column, ndim=1)


_LABEL_VALUES = st.one_of(
    st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=12),
    # any text but a blank one (no label) and a NUL at the end (numpy's strings drop it: refused, not read)
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
             .filter(lambda text: text.strip() != "" and not text.endswith("\x00")), min_size=1, max_size=12),
)


@SETTINGS
@given(labels=_LABEL_VALUES, vectors=st.booleans(), other=st.booleans(), cut=st.floats(0.0, 0.999))
def test_truncated_parquet_labels_are_refused(tmp_path_factory, labels, vectors, other, cut):
    tmp = tmp_path_factory.mktemp("pcut")
    data = _parquet_labels(tmp / "src.parquet", labels, vectors=vectors, other=other)
    path = tmp / "y.parquet"
    path.write_bytes(data[: int(len(data) * cut)])  # the footer, at the end, is gone: nothing is readable
    _labels_refused(path, len(labels), "label")


@SETTINGS
@given(labels=_LABEL_VALUES, vectors=st.booleans(), other=st.booleans(), data=st.binary(min_size=1, max_size=40))
def test_spliced_parquet_labels_are_refused_or_exact(tmp_path_factory, labels, vectors, other, data):
    tmp = tmp_path_factory.mktemp("psplice")
    valid = _parquet_labels(tmp / "src.parquet", labels, vectors=vectors, other=other)
    path = tmp / "y.parquet"
    path.write_bytes(spliced(valid, data))
    kind, result = _read(path, read_labels, n_rows=len(labels), column="label")
    if kind == "ok":  # bytes inserted where nothing reads them (before the first page, say): the labels written
        assert result.tolist() == labels


@SETTINGS
@given(labels=_LABEL_VALUES, vectors=st.booleans(), other=st.booleans())
def test_parquet_labels_round_trip(tmp_path_factory, labels, vectors, other):
    path = tmp_path_factory.mktemp("prt") / "y.parquet"
    _parquet_labels(path, labels, vectors=vectors, other=other)
    got = read_labels(path, n_rows=len(labels), column="label")
    assert got.tolist() == labels  # every label as written, in order; integers stay integers
    assert got.dtype.kind == ("i" if isinstance(labels[0], int) else "U")
    if vectors and not other:  # the only column without vectors: no name needed
        assert read_labels(path, n_rows=len(labels)).tolist() == labels
    with pytest.raises(ValueError, match=f"it has {len(labels)} labels but the embeddings have {len(labels) + 1} rows"):
        read_labels(path, n_rows=len(labels) + 1, column="label")


@SETTINGS
@given(labels=_LABEL_VALUES.filter(lambda labels: isinstance(labels[0], str)), row=st.integers(0, 11))
def test_a_parquet_label_ending_with_nul_is_refused_not_merged(tmp_path_factory, labels, row):
    path = tmp_path_factory.mktemp("pnul") / "y.parquet"
    row = row % len(labels)
    labels = labels[:row] + [labels[row] + "\x00"] + labels[row + 1:]
    _parquet_labels(path, labels)
    kind, result = _read(path, read_labels, n_rows=len(labels), column="label")
    assert kind == "refused"  # was read with the NUL dropped: 'a\x00' the same label as 'a'
    assert f"row {row} of column 'label' ends with a NUL character" in result


_LAYERS_JSON = (b'{"model": "m", "level": "sentence", "pooling": "mean", "metrics": ["isoscore", "partition_isotropy"], '
                b'"rows": [{"layer": 0, "n_samples": 8, "isoscore": 0.25, "partition_isotropy": 1e-5, '
                b'"norm_max_over_median": 2.5}, {"layer": 3, "n_samples": 8, "isoscore": null, '
                b'"partition_isotropy": 0.0, "norm_max_over_median": 1.5}, {"layer": "output", "n_samples": 8, '
                b'"isoscore": 0.5, "partition_isotropy": 0.5, "norm_max_over_median": 1.0}]}')


@SETTINGS
@given(data=st.binary(max_size=40))
def test_fuzzed_measure_json_is_drawn_or_refused_in_one_line(tmp_path, data):
    """`isotropy plot OUT.json`'s reader: a fuzzed --model JSON is drawn (the figure builds), passed on as not a
    measure JSON (None: read as a training log), or refused in one line; never another exception."""
    from isotropy.measure.figure import layers_figure, read_layers_json

    path = tmp_path / "m.json"
    path.write_bytes(spliced(_LAYERS_JSON, data))
    status, record = _read(path, reader=read_layers_json)
    if status == "ok" and record is not None:
        assert [r["layer"] for r in record["rows"]][-1] in ("output", *range(100_001))
        layers_figure(record)


def test_the_valid_measure_json_of_the_fuzz_test_is_drawn(tmp_path):
    from isotropy.measure.figure import layers_figure, read_layers_json

    path = tmp_path / "m.json"
    path.write_bytes(_LAYERS_JSON)
    record = read_layers_json(path)
    assert [r["layer"] for r in record["rows"]] == [0, 3, "output"] and np.isnan(record["rows"][1]["isoscore"])
    assert len(layers_figure(record).axes) == 3


# labels in an .npz archive (read_labels reads one member of it)


def _npz_labels(path, labels, *, coords: bool = False, compressed: bool = False):
    arrays = {"cluster": np.asarray(labels)}
    if coords:  # layer-geometry's projection_layer<L>.npz: coordinates and their cluster labels
        arrays["coords"] = np.arange(2 * len(labels), dtype=np.float64).reshape(-1, 2)
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path.read_bytes()


@SETTINGS
@given(data=st.binary(max_size=300), head=st.sampled_from([b"", b"PK\x03\x04", b"PK\x05\x06"]),
       column=st.sampled_from([None, "cluster"]), n_rows=st.integers(1, 8))
def test_npz_labels_random_bytes_never_crash(tmp_path_factory, data, head, column, n_rows):
    path = tmp_path_factory.mktemp("zlab") / "y.npz"
    path.write_bytes(head + data)
    _labels_read_or_refused(path, n_rows, column)


@SETTINGS
@given(labels=_LABEL_VALUES, coords=st.booleans(), compressed=st.booleans(), cut=st.floats(0.0, 0.999))
def test_truncated_npz_labels_are_refused(tmp_path_factory, labels, coords, compressed, cut):
    tmp = tmp_path_factory.mktemp("zcut")
    data = _npz_labels(tmp / "src.npz", labels, coords=coords, compressed=compressed)
    path = tmp / "y.npz"
    path.write_bytes(data[: int(len(data) * cut)])  # the zip directory, at the end, is gone
    _labels_refused(path, len(labels), "cluster")


@SETTINGS
@given(labels=_LABEL_VALUES, coords=st.booleans(), compressed=st.booleans())
def test_npz_labels_round_trip(tmp_path_factory, labels, coords, compressed):
    path = tmp_path_factory.mktemp("zrt") / "y.npz"
    _npz_labels(path, labels, coords=coords, compressed=compressed)
    assert read_labels(path, n_rows=len(labels), column="cluster").tolist() == labels
    if not coords:  # the only member: no name needed
        assert read_labels(path, n_rows=len(labels)).tolist() == labels
    else:
        with pytest.raises(ValueError, match=r"holds several arrays \('cluster', 'coords'\)"):
            read_labels(path, n_rows=len(labels))


# labels in a .pt/.pth or .safetensors file (read_labels reads one tensor of it, by the embeddings reader's code)

_INT_LABELS = st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=12)


def _tensor_labels(path, labels, *, emb: bool = False):
    """Save ``labels`` as the tensor ``y`` (beside the features ``emb``) by the format of ``path``."""
    import torch

    tensors = {"y": torch.tensor(labels, dtype=torch.int64)}
    if emb:  # the embeddings and their labels in one file
        tensors["emb"] = torch.arange(2 * len(labels), dtype=torch.float32).reshape(-1, 2)
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(tensors, str(path))
    else:
        torch.save(tensors, path)
    return path.read_bytes()


@SETTINGS
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".pt", ".pth", ".safetensors"]),
       head=st.sampled_from([b"", b"PK\x03\x04", b"\x80\x02", b"\x20\x00\x00\x00\x00\x00\x00\x00{"]),
       column=st.sampled_from([None, "y"]), n_rows=st.integers(1, 8))
def test_tensor_labels_random_bytes_never_crash(tmp_path_factory, data, suffix, head, column, n_rows):
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("tlab") / f"y{suffix}"
    path.write_bytes(head + data)
    _labels_read_or_refused(path, n_rows, column)


@SETTINGS
@given(labels=_INT_LABELS, suffix=st.sampled_from([".pt", ".safetensors"]), emb=st.booleans(),
       cut=st.floats(0.0, 0.999))
def test_truncated_tensor_labels_are_refused(tmp_path_factory, labels, suffix, emb, cut):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("tcut")
    data = _tensor_labels(tmp / f"src{suffix}", labels, emb=emb)
    path = tmp / f"y{suffix}"
    path.write_bytes(data[: int(len(data) * cut)])
    _labels_refused(path, len(labels), "y")


@SETTINGS
@given(labels=_INT_LABELS, suffix=st.sampled_from([".pt", ".safetensors"]), emb=st.booleans(),
       data=st.binary(min_size=1, max_size=40))
def test_spliced_tensor_labels_are_refused_or_exact(tmp_path_factory, labels, suffix, emb, data):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("tsplice")
    valid = _tensor_labels(tmp / f"src{suffix}", labels, emb=emb)
    path = tmp / f"y{suffix}"
    path.write_bytes(bytes(spliced(valid, data)))
    kind, result = _read(path, read_labels, n_rows=len(labels), column="y")
    if kind == "ok":  # bytes inserted where nothing reads them: the labels written
        assert result.tolist() == labels
    else:
        assert result.startswith(f"Cannot read labels from {str(path)!r}: "), result


@SETTINGS
@given(labels=_INT_LABELS, suffix=st.sampled_from([".pt", ".pth", ".safetensors"]), emb=st.booleans())
def test_tensor_labels_round_trip(tmp_path_factory, labels, suffix, emb):
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("trt") / f"y{suffix}"
    _tensor_labels(path, labels, emb=emb)
    got = read_labels(path, n_rows=len(labels), column="y")
    assert got.dtype == np.int64 and got.tolist() == labels
    if not emb:  # the only tensor: no name needed
        assert read_labels(path, n_rows=len(labels)).tolist() == labels
    else:
        with pytest.raises(ValueError, match=r"holds several tensors \("):
            read_labels(path, n_rows=len(labels))
