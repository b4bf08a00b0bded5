"""Gzipped word2vec binary (GoogleNews' .bin.gz) is parsed as it decompresses: with a ``limit`` (classifier-geometry's
``vocab_limit``) only the header and the first ``limit`` records are decompressed, not the whole file into a temporary
file first; the values and refusals are those of the plain ``.bin``."""

from __future__ import annotations

import gzip
import tempfile
import zlib

import numpy as np
import pytest

from isotropy import IsotropyValueError
from isotropy.io import word_vectors
from isotropy.io.word_vectors import read_word_vectors

N_WORDS, DIM = 40, 6


def _binary(X, words=None, *, header=None) -> bytes:
    words = words or [f"w{i}" for i in range(len(X))]
    head = header if header is not None else f"{X.shape[0]} {X.shape[1]}\n".encode()
    return head + b"".join(w.encode() + b" " + row.astype("<f4").tobytes() + b"\n" for w, row in zip(words, X))


@pytest.fixture
def vectors():
    # integers / 8: exact in float32; one word non-ASCII, one vector with a NaN and an inf, as the file holds them
    X = (np.random.default_rng(0).integers(-99, 99, size=(N_WORDS, DIM)) / 8).astype(np.float32)
    X[3, 1], X[5, 0] = np.nan, -np.inf
    words = [f"w{i}" for i in range(N_WORDS)]
    words[2] = "café"
    return words, X


@pytest.fixture
def no_temporary_file(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a temporary file was made")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)


@pytest.fixture
def decompressed(monkeypatch):
    """The number of bytes the reader decompresses (its stream's reads; the detection of binary not counted)."""
    counted = {"bytes": 0}
    readinto = word_vectors._CappedGzip.readinto

    def counting(self, buffer):
        n = readinto(self, buffer)
        counted["bytes"] += n
        return n

    monkeypatch.setattr(word_vectors._CappedGzip, "readinto", counting)
    return counted


@pytest.mark.parametrize("limit", [1, 2, 17, N_WORDS - 1, N_WORDS, N_WORDS + 1, 10**6, None])
def test_a_gzipped_binary_file_reads_the_values_of_the_plain_file(tmp_path, vectors, no_temporary_file, limit):
    words, X = vectors
    data = _binary(X, words)
    plain, packed = tmp_path / "v.bin", tmp_path / "v.bin.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data, mtime=0))
    n = N_WORDS if limit is None else min(limit, N_WORDS)
    for binary in (None, True):
        got_words, got = read_word_vectors(packed, limit=limit, binary=binary)
        assert got_words == words[:n] and got_words[2:3] == ["café"][:n - 2]
        np.testing.assert_array_equal(got, X[:n])  # NaN where the file has one, -inf where it has one
        assert got.dtype == np.float32 and got.shape == (n, DIM) and got.flags.writeable
        plain_words, plain_X = read_word_vectors(plain, limit=limit)
        assert plain_words == got_words and np.array_equal(plain_X, got, equal_nan=True)


def _later_part_broken(first: bytes, later: bytes, *, garbage: bool) -> bytes:
    """A gzip stream of ``first`` (flushed to a byte boundary), then ``later`` cut short and followed by garbage, or
    just cut short: decompressing past ``first`` fails."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(first) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.compress(later) + compressor.flush()
    tail = tail[: len(tail) // 2]
    return head + tail + (bytes(range(256)) * 64 if garbage else b"")


@pytest.mark.parametrize("garbage", [True, False])
def test_a_limit_decompresses_only_the_words_it_reads(tmp_path, no_temporary_file, decompressed, garbage):
    """A file of 59 MB of vectors once decompressed (zeros: under the bomb cap) whose stream breaks half-way (garbage,
    or cut short): its first words read, having decompressed a few buffers past them, never the file. Before, the
    whole file was decompressed to a temporary file first and the break refused it."""
    n_words, dim, limit = 45_000, 328, 5  # 45,000 records of about 1,320 bytes
    X = (np.arange(limit * dim).reshape(limit, dim) / 4).astype(np.float32)
    first = _binary(X, header=f"{n_words} {dim}\n".encode())
    later = b"".join(f"z{i} ".encode() + bytes(4 * dim) + b"\n" for i in range(limit, n_words))
    path = tmp_path / "GoogleNews-vectors.bin.gz"
    path.write_bytes(_later_part_broken(first, later, garbage=garbage))
    assert path.stat().st_size < 2**20
    for limit_read in (1, limit):
        decompressed["bytes"] = 0
        words, got = read_word_vectors(path, limit=limit_read)
        assert words == [f"w{i}" for i in range(limit_read)]
        np.testing.assert_array_equal(got, X[:limit_read])
        assert decompressed["bytes"] <= len(first) + 2**17  # the records read, the read-ahead of two buffers
    decompressed["bytes"] = 0
    words, got = read_word_vectors(path, limit=10_000)  # further into the intact part: as far as it needs
    assert words[-1] == "z9999" and not got[limit:].any() and np.array_equal(got[:limit], X)
    assert decompressed["bytes"] <= len(first) + (10_000 - limit) * (len(later) // (n_words - limit) + 1) + 2**17
    message = _refusal(path)  # the whole file: the break is reached and refused (garbage may decode as bytes a while)
    assert message.startswith((f"{str(path)!r} is not a readable gzip file (",
                               f"{str(path)!r} has no word at vector ")), message


def _refusal(path, **kwargs) -> str:
    with pytest.raises(IsotropyValueError) as caught:
        read_word_vectors(path, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("limit", [2, N_WORDS, None])
@pytest.mark.parametrize("case", ["not a header", "long first line", "no words", "too many digits", "dim understated",
                                  "words understated", "empty word", "no space"])
def test_a_damaged_gzipped_binary_file_is_refused_as_the_plain_file_is(tmp_path, vectors, case, limit):
    """The same parser reads both: each damage the plain .bin is refused for (its size aside) is refused in the same
    words for the .bin.gz, the file named."""
    words, X = vectors
    data = _binary(X, words)
    body = data.partition(b"\n")[2]
    data = {"not a header": b"vectors of GoogleNews\n" + body,
            "long first line": b"1" * (2**20 + 1) + b"\n" + body,
            "no words": f"0 {DIM}\n".encode() + body,
            "too many digits": f"{'9' * 19} {DIM}\n".encode() + body,
            "dim understated": f"{N_WORDS} {DIM - 1}\n".encode() + body,
            "words understated": f"{N_WORDS - 1} {DIM}\n".encode() + body,
            "empty word": _binary(X[:2], ["a", ""]),
            "no space": f"1 {DIM}\n".encode() + b"x" * 1001}[case]
    plain, packed = tmp_path / "v.bin", tmp_path / "v.bin.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data, mtime=0))
    expected, got = _outcome(plain, limit), _outcome(packed, limit)
    if limit is None:  # the whole file: each damage is refused
        assert expected[0] == "refused"
    if expected[0] == "refused":
        assert got == ("refused", expected[1].replace(str(plain), str(packed)))
        assert got[1].startswith(f"{str(packed)!r} ")
    else:  # a header lie beyond the words a limit reads goes unseen, in both
        assert got[1][0] == expected[1][0] and np.array_equal(got[1][1], expected[1][1], equal_nan=True)


def _outcome(path, limit):
    try:
        return "ok", read_word_vectors(path, limit=limit, binary=True)
    except IsotropyValueError as exc:
        assert "\n" not in str(exc)
        return "refused", str(exc)


def test_a_header_that_overstates_the_file_is_refused_where_the_stream_ends(tmp_path, vectors):
    """The plain file is refused from its size; the stream's size is known only at its end: there it is refused."""
    words, X = vectors
    data = _binary(X, words, header=f"{N_WORDS + 3} {DIM}\n".encode())
    path = tmp_path / "v.bin.gz"
    path.write_bytes(gzip.compress(data, mtime=0))
    assert _refusal(path) == f"{str(path)!r} ends after {N_WORDS} of {N_WORDS + 3} vectors (truncated word2vec binary)."
    assert read_word_vectors(path, limit=N_WORDS)[0] == words  # the words there are, as a limit asks
    data = _binary(X, words, header=f"{N_WORDS} {DIM + 1}\n".encode())  # each record read 4 bytes too far
    path.write_bytes(gzip.compress(data, mtime=0))
    assert _refusal(path).startswith(f"{str(path)!r} ")
    plain = tmp_path / "v.bin"
    plain.write_bytes(data)
    assert "too short for the 40 vectors of 7 float32 its header announces" in _refusal(plain)


def test_a_truncated_gzipped_binary_file_is_read_to_its_limit_or_refused(tmp_path, vectors):
    words, X = vectors
    data = gzip.compress(_binary(X, words), mtime=0)
    path = tmp_path / "v.bin.gz"
    for cut in range(0, len(data), 7):
        path.write_bytes(data[:cut])
        for limit in (3, None):
            try:
                got_words, got = read_word_vectors(path, limit=limit, binary=True)
            except IsotropyValueError as exc:
                message = str(exc)
                assert message.startswith((f"{str(path)!r} is not a readable gzip file (", f"{str(path)!r} ends ",
                                           f"{str(path)!r} is not a word2vec binary file")), message
            else:
                assert limit == 3 and got_words == words[:3]
                np.testing.assert_array_equal(got, X[:3])


def test_a_header_past_the_bomb_cap_is_refused_before_a_record_is_read(tmp_path, decompressed):
    path = tmp_path / "v.bin.gz"
    path.write_bytes(gzip.compress(b"3000000 100000\nw " + bytes(400), mtime=0))
    for limit in (10, None):
        message = _refusal(path, limit=limit)
        assert message == (f"{str(path)!r} has the word2vec header '3000000 100000': its vectors would take at least "
                           f"{15 + 3_000_000 * (4 * 100_000 + 2)} bytes, more than the {64 * 2**20} bytes isotropy decompresses of a gzip file "
                           f"of {path.stat().st_size} bytes (truncated file or wrong header).")
    assert decompressed["bytes"] < 2**17


def test_a_gzip_bomb_after_the_last_word_is_refused(tmp_path):
    """A word2vec binary whose stream goes on with 80 MiB of spaces after its one record: the spaces could pass for
    the file's end, but the stream is read to its end (its checksum) only up to the bomb cap, then refused."""
    path = tmp_path / "v.bin.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b"1 3\nw " + np.float32([1, 2, 3]).tobytes())
        for _ in range(80):
            out.write(b" " * 2**20)
    assert _refusal(path).startswith(f"{str(path)!r} expands from {path.stat().st_size} to at least ")
    assert "as a decompression bomb would); expected a gzip-compressed word-vector file." in _refusal(path)
    # a limit that reaches the header's count reads the stream to its end as well: the same refusal
    assert _refusal(path, limit=1) == _refusal(path)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("block", [4, 8192])
def test_a_non_numeric_entry_is_said_at_its_line_and_entry(tmp_path, monkeypatch, header, block):
    """A word vector with a word among its numbers was refused as "'v.vec' has a non-numeric vector entry", with no
    line, word or value to look for in a file of 400,000 lines (a user trial). The line counts as an editor does
    (the word2vec header and a blank line included), across the reader's blocks of rows."""
    monkeypatch.setattr(word_vectors, "_ROWS_PER_BLOCK", block)
    rng = np.random.default_rng(0)
    lines = [f"w{i} " + " ".join(f"{x:.4f}" for x in rng.normal(size=5)) for i in range(12)]
    lines[9] = "w9 0.1 0.2 1,5 0.4 0.5"  # a decimal comma
    lines.insert(3, "")
    text = (["12 5"] if header else []) + lines
    path = tmp_path / ("v.vec" if header else "v.txt")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    lineno = text.index("w9 0.1 0.2 1,5 0.4 0.5") + 1
    with pytest.raises(IsotropyValueError) as err:
        read_word_vectors(path)
    assert str(err.value) == (f"{path}:{lineno}: entry 3 of the vector of 'w9' is '1,5', not a number; expected "
                              f"lines '<word> <x1> ... <xd>' of numbers.")
    lines[lines.index("w9 0.1 0.2 1,5 0.4 0.5")] = "w9 0.1 0.2 1.5 0.4 0.5"
    path.write_text("\n".join((["12 5"] if header else []) + lines) + "\n", encoding="utf-8")
    words, vectors = read_word_vectors(path)[:2]
    assert words[9] == "w9" and vectors[9].tolist() == np.array([0.1, 0.2, 1.5, 0.4, 0.5], np.float32).tolist()


def test_a_word2vec_text_file_with_a_latin1_word_is_text_not_binary(tmp_path):
    # one byte that is not UTF-8 in a word of the first 4 KB made the file "binary", then refused as "goes on after
    # the 50 vectors of 4 features its header announces" (a user trial): text is told by its first vector line
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)).astype(np.float32)
    words = [b"caf\xe9" if i == 10 else f"w{i}".encode() for i in range(50)]
    body = b"".join(w + b" " + " ".join(repr(float(v)) for v in row).encode() + b"\n" for w, row in zip(words, X))
    path = tmp_path / "latin.vec"
    path.write_bytes(b"50 4\n" + body)
    read, got = read_word_vectors(path)
    np.testing.assert_array_equal(got, X)
    assert read[10] == "caf\ufffd" and read[:2] == ["w0", "w1"]  # undecodable bytes replaced, as documented
    assert read_word_vectors(path, encoding="latin-1")[0][10] == "café"
    binary = tmp_path / "b.bin"  # word2vec binary with the same word is still binary
    binary.write_bytes(b"50 4\n" + b"".join(w + b" " + row.astype("<f4").tobytes() for w, row in zip(words, X)))
    read, got = read_word_vectors(binary, encoding="latin-1")
    np.testing.assert_array_equal(got, X)
    assert read[10] == "café"
