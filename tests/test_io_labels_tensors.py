"""Labels in ``.pt``/``.pth`` and ``.safetensors`` files: a tensor, or one of a dict of tensors named by ``column``.

``isotropy measure embd.pt --key emb --labels embd.pt --label-column y`` (embeddings and labels in one
``torch.save``'d dict, as PyTorch users keep them) was refused: "unknown file extension '.pt'". The labels reader
now reads such files with the embeddings reader's loading code (``weights_only=True``, the zip-expansion, layout and
storage checks, bfloat16), in its own words.
"""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import MarkerPayload
from isotropy._utils.validation import IsotropyValueError
from isotropy.cli import cli
from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels

torch = pytest.importorskip("torch")


def _embd(path, X, y, **more):
    torch.save({"emb": torch.from_numpy(X), "y": torch.from_numpy(y), **more}, path)
    return path


def test_an_int64_member_of_a_saved_dict(tmp_path):
    y = np.array([3, 0, 2, 2, 0, 1], dtype=np.int64)
    path = _embd(tmp_path / "embd.pt", np.ones((6, 4), np.float32), y)
    got = read_labels(path, n_rows=6, column="y")
    assert got.dtype == np.int64 and got.tolist() == y.tolist()
    # .pth the same; the name matched by the tensor's key
    torch.save({"labels": torch.from_numpy(y)}, tmp_path / "y.pth")
    assert read_labels(tmp_path / "y.pth", n_rows=6).tolist() == y.tolist()  # the only tensor: no name needed
    assert read_labels(tmp_path / "y.pth", n_rows=6, column="labels").tolist() == y.tolist()
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=7, column="y")
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: it has 6 labels but the embeddings have 7 "
                              f"rows; expected one label per embedding row.")


def test_a_single_tensor_and_a_bool_tensor(tmp_path):
    torch.save(torch.tensor([1, 0, 1, 1]), tmp_path / "y.pt")
    assert read_labels(tmp_path / "y.pt", n_rows=4).tolist() == [1, 0, 1, 1]
    torch.save(torch.tensor([[1], [0], [2]]), tmp_path / "col.pt")  # a column
    assert read_labels(tmp_path / "col.pt", n_rows=3).tolist() == [1, 0, 2]
    flags = torch.tensor([True, False, False, True, True])
    torch.save(flags, tmp_path / "b.pt")
    got = read_labels(tmp_path / "b.pt", n_rows=5)
    assert got.dtype == np.bool_ and got.tolist() == flags.tolist()
    with pytest.raises(IsotropyValueError) as err:  # a name for a file of one tensor: not silently ignored
        read_labels(tmp_path / "b.pt", n_rows=5, column="y")
    assert str(err.value) == (f"Cannot read labels from {str(tmp_path / 'b.pt')!r}: a tensor ('y') was named, but the "
                              f"file saves a single tensor, not a dict of tensors; expected the label column left out "
                              f"for a file holding one tensor.")


def test_a_2d_indicator_tensor_is_multi_label(tmp_path):
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 0, 1], [0, 0, 0]], dtype=np.int64)
    for value in (torch.from_numpy(Y), torch.from_numpy(Y).bool(), torch.from_numpy(Y).float()):
        torch.save({"emb": torch.zeros(4, 2), "Y": value}, tmp_path / "m.pt")
        got = read_labels(tmp_path / "m.pt", n_rows=4, column="Y")
        assert got.dtype == np.int8 and np.array_equal(got, Y)
    torch.save({"Y": torch.tensor([[1, 2], [0, 1]])}, tmp_path / "bad.pt")
    with pytest.raises(IsotropyValueError, match=r"must hold 0/1 indicators \(multi-label\); found 2;"):
        read_labels(tmp_path / "bad.pt", n_rows=2)


def test_several_tensors_without_a_name_and_a_missing_name(tmp_path):
    path = _embd(tmp_path / "embd.pt", np.ones((3, 2), np.float32), np.array([0, 1, 0]))
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=3)
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: the saved dict holds several tensors ('emb', "
                              f"'y'); expected the one holding the labels named with --label-column (column= in "
                              f"Python).")
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=3, column="yy")
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: the saved dict has no tensor 'yy'; expected one "
                              f"of 'emb', 'y'. Did you mean 'y'?")
    from safetensors.numpy import save_file

    save_file({"emb": np.ones((3, 2), np.float32), "label": np.array([0, 1, 0])}, str(tmp_path / "e.safetensors"))
    with pytest.raises(IsotropyValueError) as err:
        read_labels(tmp_path / "e.safetensors", n_rows=3)
    assert str(err.value) == (f"Cannot read labels from {str(tmp_path / 'e.safetensors')!r}: the .safetensors file "
                              f"holds several tensors ('emb', 'label'); expected the one holding the labels named with "
                              f"--label-column (column= in Python).")
    with pytest.raises(IsotropyValueError) as err:
        read_labels(tmp_path / "e.safetensors", n_rows=3, column="labels")
    assert str(err.value) == (f"Cannot read labels from {str(tmp_path / 'e.safetensors')!r}: the .safetensors file has "
                              f"no tensor 'labels'; expected one of 'emb', 'label'. Did you mean 'label'?")
    torch.save({}, tmp_path / "empty.pt")
    with pytest.raises(IsotropyValueError, match=r"empty\.pt': the saved dict holds no tensors; expected "):
        read_labels(tmp_path / "empty.pt")


def test_a_pickled_object_is_never_unpickled(tmp_path):
    marker = tmp_path / "RAN"
    path = tmp_path / "evil.pt"
    torch.save({"y": torch.tensor([0, 1]), "payload": MarkerPayload(marker)}, path)
    with open(tmp_path / "raw.pt", "wb") as handle:  # a legacy pickle of the object alone
        pickle.dump(MarkerPayload(marker), handle, protocol=2)
    for name in ("evil.pt", "raw.pt"):
        with pytest.raises(IsotropyValueError) as err:
            read_labels(tmp_path / name, n_rows=2, column="y" if name == "evil.pt" else None)
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"Cannot read labels from {str(tmp_path / name)!r}: ")
        assert "weights_only=False" not in message
    assert str(err.value).startswith(f"Cannot read labels from {str(tmp_path / 'raw.pt')!r}: torch.load("
                                     f"weights_only=True) failed")
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=2, column="y")
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: torch.load(weights_only=True) failed: it holds "
                              f"pickled Python objects besides tensors, which isotropy never unpickles (they can run "
                              f"code); expected a tensor, or a dict of tensors, saved with torch.save.")
    assert not marker.exists()
    torch.save([torch.tensor([0, 1])], tmp_path / "list.pt")  # weights_only loads a list: not a tensor or a dict
    with pytest.raises(IsotropyValueError, match=r"list\.pt': torch\.load returned a list; expected a tensor, or a "
                                                 r"dict of tensors\.$"):
        read_labels(tmp_path / "list.pt")


def test_a_deflated_bomb_is_refused_as_the_embeddings_reader_refuses_it(tmp_path):
    from test_io_bombs import _torch_bomb

    path = tmp_path / "bomb.pt"
    _torch_bomb(path, torch)
    assert path.stat().st_size < 2**20
    with pytest.raises(IsotropyValueError) as labels:
        read_labels(path)
    with pytest.raises(IsotropyValueError) as embeddings:
        read_embeddings(path)
    expands = f"member '{zipfile.ZipFile(path).namelist()[0].split('/')[0]}/data/0' expands from "
    assert expands in str(labels.value) and "\n" not in str(labels.value)
    assert str(labels.value) == str(embeddings.value).replace("Cannot read embeddings from", "Cannot read labels from")


def test_an_expanded_view_and_a_sparse_tensor_are_refused_in_the_labels_words(tmp_path):
    torch.save({"y": torch.zeros(1, dtype=torch.int64).expand(10**6)}, tmp_path / "view.pt")
    with pytest.raises(IsotropyValueError, match=r"^Cannot read labels from .*view\.pt': its tensor of shape "
                                                 r"\(1000000,\) and strides \(0,\) holds 8000000 bytes of int64 but "
                                                 r"stores 8 \(an expanded or overlapping view"):
        read_labels(tmp_path / "view.pt")
    torch.save({"y": torch.tensor([0, 1, 0]).to_sparse()}, tmp_path / "sparse.pt")
    with pytest.raises(IsotropyValueError, match=r"^Cannot read labels from .*sparse\.pt': its tensor 'y' is sparse"):
        read_labels(tmp_path / "sparse.pt")


def test_safetensors_int_bfloat16_and_float_tensors(tmp_path):
    from safetensors.numpy import save_file
    from safetensors.torch import save_file as save_torch

    y = np.array([2, 0, 1, 1, 0, 2], dtype=np.int64)
    save_file({"emb": np.ones((6, 3), np.float32), "y": y}, str(tmp_path / "e.safetensors"))
    got = read_labels(tmp_path / "e.safetensors", n_rows=6, column="y")
    assert got.dtype == np.int64 and got.tolist() == y.tolist()
    # bfloat16 (numpy has no such type: the whole file is not loadable by safetensors.numpy) and float16/float32
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        save_torch({"emb": torch.ones(6, 3, dtype=dtype), "y": torch.from_numpy(y).to(dtype)},
                   str(tmp_path / "b.safetensors"))
        got = read_labels(tmp_path / "b.safetensors", n_rows=6, column="y")
        assert got.dtype == np.float32 and got.tolist() == [float(v) for v in y], dtype
    torch.save({"y": torch.from_numpy(y).to(torch.bfloat16)}, tmp_path / "b.pt")  # a .pt of bfloat16: as float32
    got = read_labels(tmp_path / "b.pt", n_rows=6)
    assert got.dtype == np.float32 and got.tolist() == [float(v) for v in y]
    (tmp_path / "junk.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(IsotropyValueError, match=r"^Cannot read labels from .*junk\.safetensors': not a readable "
                                                 r"\.safetensors file"):
        read_labels(tmp_path / "junk.safetensors")


def test_nan_labels_in_a_tensor_are_refused(tmp_path):
    torch.save(torch.tensor([0.0, float("nan"), 1.0]), tmp_path / "y.pt")
    with pytest.raises(IsotropyValueError, match=r"y\.pt': it contains NaN or inf; expected finite labels\.$"):
        read_labels(tmp_path / "y.pt", n_rows=3)


@pytest.mark.parametrize("name", ["embd.pt", "embd.pth", "embd.safetensors"])
def test_measure_reads_the_labels_tensor_of_the_embeddings_file(tmp_path, name):
    """``isotropy measure embd.pt --key emb --labels embd.pt --label-column y``: the silhouette of the features
    ``emb`` (all of them: the labels are a tensor of their own, not a column left out) under the labels ``y``."""
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(4), 15)
    X = rng.normal(size=(60, 5)) + y[:, None] * 0.8
    path = tmp_path / name
    if name.endswith(".safetensors"):
        from safetensors.numpy import save_file

        save_file({"emb": X, "y": y}, str(path))
    else:
        _embd(path, X, y)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["measure", str(path), "--key", "emb", "--labels", str(path), "--label-column",
                                       "y", "--metrics", "silhouette_score", "--json", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["n_features"] == 5 and record["n_clusters"] == 4 and record["label_column"] == "y"
    assert record["values"]["silhouette_score"] == pytest.approx(silhouette_score(X, y), rel=1e-6)
    # the name missing: one line naming the tensors, the file and the name suggested
    result = CliRunner().invoke(cli, ["measure", str(path), "--key", "emb", "--labels", str(path), "--label-column",
                                       "label", "--metrics", "silhouette_score"])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"Error: Cannot read labels from {str(path)!r}: the ") and \
        line.endswith(" no tensor 'label'; expected one of 'emb', 'y'.") and len(result.output.strip().splitlines()) == 1


def test_a_pt_labels_file_without_torch_names_pytorch(tmp_path):
    """On the core install (no torch) a .pt labels file gives the embeddings reader's one-line hint."""
    from test_core_install import _run_without_extras

    np.save(tmp_path / "x.npy", np.eye(4))
    (tmp_path / "y.pt").write_bytes(b"PK")
    result = _run_without_extras("""
        from isotropy.cli import main
        main(["measure", "x.npy", "--labels", "y.pt", "--label-column", "y", "--metrics", "silhouette_score"])
    """, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == ("Error: Reading 'y.pt' needs PyTorch: pip install torch --index-url "
                                     "https://download.pytorch.org/whl/cpu (CPU only; with a GPU, the command "
                                     "pytorch.org gives for its CUDA)"), result.stderr


def test_complex_labels_are_refused(tmp_path):
    """A complex array of labels was read, and each distinct complex value taken as a cluster (found in review)."""
    import numpy as np

    from isotropy._utils.validation import IsotropyValueError
    from isotropy.io.labels import read_labels

    path = tmp_path / "y.npy"
    np.save(path, np.array([0, 1, 1, 0], dtype=np.complex128))
    with pytest.raises(IsotropyValueError) as info:
        read_labels(path)
    assert str(info.value) == (f"Cannot read labels from {str(path)!r}: the array is complex (complex128); expected "
                               f"real labels: integers, strings, or a 2-d 0/1 array.")


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_labels_beside_embeddings_are_read_without_the_embeddings(tmp_path, suffix):
    """`--labels embd.pt --label-column y` read every tensor of the file to take y: the embeddings a second time
    (199 MiB more for 195 MiB of embeddings in .pt, 395 MiB in .safetensors; found in review). Only the tensor taken
    is read now: the peak grows by a fraction of the embeddings (measured in a fresh process)."""
    import subprocess
    import sys

    import torch

    embeddings = torch.randn(32_768, 512)  # 64 MiB
    tensors = {"emb": embeddings, "y": torch.arange(32_768) % 3}
    path = tmp_path / f"embd{suffix}"
    if suffix == ".pt":
        torch.save(tensors, path)
    else:
        from safetensors.torch import save_file

        save_file(tensors, str(path))
    # the peak of the process's own memory (VmHWM: ru_maxrss keeps the peak of the process that forked it)
    code = ("import sys, torch\n"
            "from isotropy.io.labels import read_labels\n"
            "def peak():\n"
            "    with open('/proc/self/status') as status:\n"
            "        return next(int(line.split()[1]) for line in status if line.startswith('VmHWM'))\n"
            "before = peak()\n"
            "y = read_labels(sys.argv[1], column='y')\n"
            "assert y.tolist() == [i % 3 for i in range(32768)]\n"
            "print((peak() - before) * 1024)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert int(out.stdout) < embeddings.numel() * 4 // 4, out.stdout  # under 16 MiB for 64 MiB of embeddings


def test_a_nested_labels_tensor_is_refused_as_labels(tmp_path):
    """Labels saved per batch as a nested tensor were refused in the embeddings' words ("expected a dense 2-d tensor
    of shape (n_samples, n_features)"), which is wrong for labels: the message now asks for labels and says how to
    join the pieces; the same tensor given as EMBEDDINGS keeps the embeddings' words."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: nested tensors are a prototype
        y = torch.nested.nested_tensor([torch.tensor([0, 1, 1]), torch.tensor([2, 0])])
    path = tmp_path / "embd.pt"
    torch.save({"emb": torch.ones(5, 4), "y": y}, path)
    with pytest.raises(IsotropyValueError) as info:
        read_labels(path, n_rows=5, column="y")
    assert str(info.value) == (f"Cannot read labels from {str(path)!r}: its tensor 'y' is a nested tensor of 2 pieces; "
                               f"expected a dense 1-d tensor of labels, or a 2-d 0/1 tensor of one column per label: "
                               f"torch.save(torch.cat(tensor.unbind()), path) saves its pieces' labels.")
    torch.save({"emb": torch.ones(5, 4), "y": torch.cat(y.unbind())}, path)  # the advice, followed
    assert read_labels(path, n_rows=5, column="y").tolist() == [0, 1, 1, 2, 0]
    with pytest.raises(IsotropyValueError, match=r"expected a dense 2-d tensor of shape \(n_samples, n_features\)"):
        torch.save({"emb": torch.ones(5, 4), "y": y}, path)
        read_embeddings(path, key="y")


def test_labels_in_a_nested_dict(tmp_path):
    """The labels reader counts the tensors of a dict inside the saved dict as the embeddings reader does (their keys
    joined with '/'), and a column naming that dict says what it holds, in this reader's words."""
    y = np.array([1, 0, 1], dtype=np.int64)
    path = tmp_path / "embd.pt"
    torch.save({"emb": torch.ones(3, 2), "meta": {"y": torch.from_numpy(y)}}, path)
    assert read_labels(path, n_rows=3, column="meta/y").tolist() == [1, 0, 1]
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=3, column="meta")
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: the saved dict's 'meta' is a dict of tensors, "
                              f"not a tensor; expected the name of one of the tensors inside it, its key and theirs "
                              f"joined with '/': ['meta/y'].")
    with pytest.raises(IsotropyValueError, match=r"several tensors \('emb', 'meta/y'\)"):
        read_labels(path, n_rows=3)
