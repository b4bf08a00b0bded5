"""Every int of every experiment's config is bounded by one shared check (``ExperimentConfig._bounded_ints``).

A security trial: ``updates: 9999999999999999999999`` (also in hex or binary) was an OverflowError traceback in
classifier-geometry's ``recorded_points``, and ``updates: 10**18`` / ``sample_size: 99999999999999`` were accepted.
"""

from __future__ import annotations

import pytest
from test_experiment_config import CG, _cli

from isotropy.cli import EXPERIMENTS, load_experiment, main


@pytest.mark.parametrize(("content", "key", "shown", "allowed"), [
    ("updates: 9999999999999999999999\n", "updates", "9999999999999999999999", "[1, 1000000000]"),
    ("updates: 1_000_000_000_000_000_000\n", "updates", "1000000000000000000", "[1, 1000000000]"),
    ("sample_size: 99999999999999\n", "sample_size", "99999999999999", "[3, 1000000000]"),
    ("updates: 0x" + "f" * 5000 + "\n", "updates", "an int of about 6,021 digits", "[1, 1000000000]"),
    ("updates: 0b" + "1" * 5000 + "\n", "updates", "... (1,506 characters)", "[1, 1000000000]"),
])
def test_an_int_past_the_bound_of_a_config_is_one_line_naming_key_value_and_range(tmp_path, capsys, content, key,
                                                                                    shown, allowed):
    # 9999999999999999999999 (also in hex or binary) was an OverflowError traceback ("Python int too large to convert
    # to C ssize_t" in recorded_points); updates 10**18 and sample_size 99999999999999 were accepted
    path = tmp_path / "huge.yaml"
    path.write_text(content)
    code, _, err = _cli(["run", CG, "--setup", str(path), "--print-config"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"Error: The '{key}' setting of classifier-geometry must be an int in {allowed} ("), err
    assert f"{shown} instead." in err and " Got " in err
    assert len(err) < 400


@pytest.mark.parametrize(("name", "setting", "message"), [
    ("minibatch-stability", "synthetic.n_features=10000000000",
     "The 'synthetic.n_features' setting of minibatch-stability must be an int in [2, 1000000000] ("),
    ("minibatch-stability", "batch_sizes=[2, 1000000001]",
     "The 'batch_sizes' setting of minibatch-stability must hold ints in [-1000000000, 1000000000] ("),
    ("sts-isotropy", "sweep.n_clusters=[1, 99999999999]",
     "The 'sweep.n_clusters' setting of sts-isotropy must hold ints in [1, 1000000000] ("),
    ("layer-geometry", "layers=-10000000000",
     "The 'layers' setting of layer-geometry must be an int in [-1000000000, 1000000000] ("),
    ("istar", "epochs=10000000000", "The 'epochs' setting of istar must be an int in [1, 1000000000] ("),
    ("istar", "data_seed=4294967296", "The 'data_seed' setting of istar must be less than or equal to 4294967295."),
    # ClusterCentering's own bound (MAX_N_INIT), when the config loads rather than at the first layer's fit
    ("layer-geometry", "metrics.n_init=1001",
     "The 'metrics.n_init' setting of layer-geometry must be less than or equal to 1000."),
    ("frozen-classification", "max_iter=10000000000",
     "The 'max_iter' setting of frozen-classification must be an int in [1, 1000000000] ("),
    ("cluster-finetune", "geometry.every_n_steps=10000000000",
     "The 'geometry.every_n_steps' setting of cluster-finetune must be an int in [1, 1000000000] ("),
    ("activation-diagrams", "top_k=[1, 10000000000]",
     "The 'top_k' setting of activation-diagrams must hold ints in [-1000000000, 1000000000] ("),
])
def test_every_experiment_bounds_its_ints_by_the_shared_check(name, setting, message, capsys):
    code, _, err = _cli(["run", name, "--set", setting, "--print-config"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"Error: {message}"), err


def test_the_int_bound_is_the_bound_of_every_int_key_but_a_seeds():
    from pydantic import BaseModel

    from isotropy.experiments._config import MAX_INT, MAX_SEED, _int_bounds, _section

    def int_fields(model, prefix=""):
        for name, field in model.model_fields.items():
            section = _section(field.annotation)
            if section is not None:
                yield from int_fields(section, f"{prefix}{name}.")
            elif issubclass(model, BaseModel):
                yield f"{prefix}{name}", field

    assert MAX_INT == 10**9 and MAX_SEED == 2**32 - 1
    for name in EXPERIMENTS:
        for key, field in int_fields(load_experiment(name).config_model):
            bounds = (_int_bounds(field.annotation, field.metadata),
                      _int_bounds(field.annotation, field.metadata, item=True))
            if "seed" in key:  # seeds declare their own bound, 2**32 - 1: what the generators take
                assert bounds == (None, None), (name, key)
            for bound in bounds:
                assert bound is None or bound[1] == MAX_INT, (name, key)


def test_the_int_bound_keeps_every_packaged_setups_values():
    from isotropy.experiments._config import available_setups

    for name in EXPERIMENTS:
        for setup in available_setups(name):
            load_experiment(name).config(setup)  # validates (test_every_packaged_setup_validates) under the bound
            main(["run", name, "--setup", setup, "--print-config"])
