"""isotropy.training metrics against the pure functions: any batch split, merge_state, reset, device, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy import (
    cosine_similarity_mean,
    isoscore,
    isoscore_star,
    participation_ratio,
    rogue_dimension_share,
    twonn_dimension,
)
from isotropy._utils.validation import IsotropyValueError
from isotropy.metrics.rogue import cosine_contributions
from isotropy.training import (
    IsoScore,
    IsoScoreStar,
    MeanCosine,
    ParticipationRatio,
    RogueDimensionShare,
    TwoNNDimension,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _data(seed=0, n=120, d=7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(0.5, 3.0, d) + rng.normal(scale=2.0, size=d)
    return X


SHRINK = np.cov(np.random.default_rng(5).normal(size=(400, 7)) * np.arange(1, 8), rowvar=False)

# metric factory, pure function on all rows (float64 numpy)
CASES = {
    "isoscore": (lambda: IsoScore(), isoscore),
    "isoscore_star_identity": (lambda: IsoScoreStar(zeta=0.3), lambda X: isoscore_star(X, zeta=0.3)),
    "isoscore_star_sigma": (lambda: IsoScoreStar(shrinkage_cov=SHRINK, zeta=0.2),
                            lambda X: isoscore_star(X, shrinkage_cov=SHRINK, zeta=0.2)),
    "cosine_similarity_mean": (lambda: MeanCosine(), cosine_similarity_mean),
    "participation_ratio": (lambda: ParticipationRatio(), participation_ratio),
    "rogue_dimension_share": (lambda: RogueDimensionShare(n_dimensions=2),
                              lambda X: rogue_dimension_share(X, n_dimensions=2)),
    "twonn_dimension": (lambda: TwoNNDimension(), twonn_dimension),
}
MOMENT_CASES = sorted(name for name in CASES if name != "twonn_dimension")


def _split_points(draw_cuts, n):
    cuts = sorted({c for c in draw_cuts if 0 < c < n})
    return np.split(np.arange(n), cuts)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=119), max_size=6), seed=st.integers(0, 3))
def test_any_batch_split_equals_pure_function(name, cuts, seed):
    make, reference = CASES[name]
    X = _data(seed)
    metric = make()
    for rows in _split_points(cuts, X.shape[0]):
        metric.update(torch.tensor(X[rows], dtype=torch.float64))
    value = metric.compute()
    assert value.dtype == torch.float64 and value.ndim == 0
    assert float(value) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


@pytest.mark.filterwarnings("ignore:The ``compute`` method")  # the merged metric itself saw no update()
@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_state_equals_pure_function_on_the_union(name):
    make, reference = CASES[name]
    X = _data(1)
    parts = np.array_split(np.arange(X.shape[0]), 3)
    metrics = [make() for _ in parts]
    for metric, rows in zip(metrics, parts):
        metric.update(torch.tensor(X[rows]))
    merged = make()  # an empty metric absorbs the others
    for metric in metrics:
        merged.merge_state(metric)
    assert float(merged.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)
    metrics[0].merge_state(metrics[1].metric_state)  # from a state dict, too
    metrics[0].merge_state(metrics[2])
    assert float(metrics[0].compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_merge_after_compute_is_seen_by_the_next_compute(name):
    """compute() caches its value; a merge_state afterwards must not leave the stale value in place."""
    make, reference = CASES[name]
    X = _data(3)
    half = X.shape[0] // 2
    metric, other = make(), make()
    metric.update(torch.tensor(X[:half]))
    other.update(torch.tensor(X[half:]))
    assert float(metric.compute()) == pytest.approx(reference(X[:half]), rel=1e-10, abs=1e-10)
    metric.merge_state(other)
    assert float(metric.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reset_forgets_and_float32_input_is_accumulated_in_float64(name):
    make, reference = CASES[name]
    X = _data(2)
    metric = make()
    metric.update(torch.tensor(_data(3)[:50]))
    metric.reset()
    metric.update(torch.tensor(X, dtype=torch.float32))
    X32 = np.asarray(torch.tensor(X, dtype=torch.float32).double())
    assert float(metric.compute()) == pytest.approx(reference(X32), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_dtype_conversion_after_update_keeps_the_float64_states(name, dtype):
    # torchmetrics casts the states with .to(dtype): compute then raised (bfloat16), overflowed (float16) or drifted
    # by 3e-9 (float32), also for a metric inside a module converted with module.to(dtype)
    make, reference = CASES[name]
    X = _data(4)
    module = torch.nn.Module()
    module.metric = make()
    module.metric.update(torch.tensor(X))
    module.to(getattr(torch, dtype))
    assert all(value.dtype == torch.float64 for value in module.metric.metric_state.values()
               if isinstance(value, torch.Tensor))
    assert float(module.metric.compute()) == pytest.approx(reference(X), rel=1e-12, abs=1e-12)
    module.metric.set_dtype(getattr(torch, dtype))  # torchmetrics' own way: the states stay float64 too
    module.metric.update(torch.tensor(X))
    assert float(module.metric.compute()) == pytest.approx(reference(np.concatenate([X, X])), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_batch_of_no_rows_adds_nothing(name):
    # the last batch of a filtered stream, or a process's empty share, was an error ("at least 1 sample")
    make, reference = CASES[name]
    X = _data(5)
    metric = make()
    metric.update(torch.empty(0, X.shape[1]))
    metric.update(torch.tensor(X))
    metric.update(np.empty((0, X.shape[1])))
    assert float(metric.compute()) == pytest.approx(reference(X), rel=1e-12, abs=1e-12)
    with pytest.raises(IsotropyValueError, match=rf"must have {X.shape[1]} features \(columns\), like the previous "
                                                 rf"batches\. Got {X.shape[1] + 1} instead"):
        metric.update(torch.empty(0, X.shape[1] + 1))


def test_isoscore_metric_closed_form_and_published_value():
    # covariance diag(1, 0, 0) shrunk toward I with ζ = 0.2: IsoScore* = 0.407407 (docstring of isoscore_star)
    metric = IsoScoreStar(zeta=0.2)
    metric.update(torch.tensor([[-1.0, 0, 0]], dtype=torch.float64) / 2 ** 0.5)
    metric.update(torch.tensor([[1.0, 0, 0]], dtype=torch.float64) / 2 ** 0.5)
    assert float(metric.compute()) == pytest.approx(11 / 27, abs=1e-12)
    # the isoscore package 2.0.1 (the authors' reference implementation; takes (n_samples, n_features))
    isoscore_pkg = pytest.importorskip("IsoScore.IsoScore")
    X = _data(4, n=500, d=5)
    metric = IsoScore()
    for batch in np.array_split(X, 4):
        metric.update(batch)  # numpy batches are accepted too
    assert float(metric.compute()) == pytest.approx(float(isoscore_pkg.IsoScore(X)), rel=1e-6)


def test_rogue_share_against_a_brute_force_pair_average():
    X = _data(6, n=40, d=5)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    products = U[:, None, :] * U[None, :, :]  # (n, n, d): x̂ⱼᵢ·x̂ₖᵢ
    off = ~np.eye(40, dtype=bool)
    cc = products[off].mean(axis=0)
    np.testing.assert_allclose(cosine_contributions(X), cc, rtol=1e-12, atol=1e-15)
    top = np.sort(cc)[::-1]
    assert rogue_dimension_share(X, n_dimensions=2) == pytest.approx(top[:2].sum() / cc.sum(), rel=1e-12)
    metric = RogueDimensionShare(n_dimensions=2)
    metric.update(torch.tensor(X[:13])); metric.update(torch.tensor(X[13:]))
    assert float(metric.compute()) == pytest.approx(top[:2].sum() / cc.sum(), rel=1e-10)


def test_rogue_share_is_nan_with_a_warning_when_the_mean_cosine_is_not_positive():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])  # mean cosine −1/3
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(rogue_dimension_share(X))
    metric = RogueDimensionShare()
    metric.update(torch.tensor(X))
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert torch.isnan(metric.compute())


def test_twonn_cap_keeps_a_seeded_uniform_sample():
    # the rows' bits choose the sample (their keys hash them): built by numpy's generator and element-wise products and
    # sums, the same bits on every CPU. A matrix product's last bits move with the BLAS kernel the CPU gets: the rows
    # of torch.randn @ torch.randn, which passed in CI, kept a sample that read 2.34 on a later machine (this test's
    # own failure there)
    rng = np.random.default_rng(0)
    Z, M = rng.standard_normal((900, 2)), rng.standard_normal((2, 6))
    X = torch.from_numpy(Z[:, :1] * M[0] + Z[:, 1:] * M[1])
    values = []
    for _ in range(2):
        metric = TwoNNDimension(max_samples=400, random_state=3)
        for batch in X.split(128):
            metric.update(batch)
        rows = torch.cat(metric.rows)
        assert rows.shape == (400, 6)
        values.append(float(metric.compute()))
        assert values[-1] == pytest.approx(twonn_dimension(rows.numpy()), rel=1e-12)
    assert values[0] == values[1]  # same seed, same split -> same rows
    assert values[0] == pytest.approx(2.0, abs=0.3)


def test_state_follows_the_input_and_values_are_on_its_device():
    metric = IsoScore()
    assert metric.device.type == "cpu"
    metric.update(torch.tensor(_data(0)))
    assert metric.scatter.dtype == torch.float64 and metric.compute().device == metric.device


# every device this machine has (CPU always; CUDA where present): the test never skips
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_input_device_keeps_states_and_value_on_it(device):
    X = torch.tensor(_data(0), device=device)
    for name, (make, reference) in CASES.items():
        metric = make().to(device)
        metric.update(X[:60])
        metric.update(X[60:])
        value = metric.compute()
        assert value.device.type == device, name
        assert float(value) == pytest.approx(reference(_data(0)), rel=1e-10, abs=1e-10), name


def test_errors_name_the_argument_and_value():
    metric = IsoScore()
    metric.update(torch.zeros(3, 4) + 1.0)
    with pytest.raises(IsotropyValueError, match="identical"):
        metric.compute()
    with pytest.raises(IsotropyValueError, match="must have 4 features"):
        metric.update(torch.zeros(2, 5))
    with pytest.raises(IsotropyValueError, match="at least 2 rows"):
        IsoScore().compute()
    with pytest.raises(IsotropyValueError, match="2-d"):
        IsoScore().update(torch.zeros(4))
    with pytest.raises(IsotropyValueError, match="'zeta' parameter of IsoScoreStar"):
        IsoScoreStar(zeta=1.5)
    with pytest.raises(IsotropyValueError, match="zero vectors"):
        MeanCosine().update(torch.zeros(2, 3))
    with pytest.raises(IsotropyValueError, match="'max_samples' parameter of TwoNNDimension"):
        TwoNNDimension(max_samples=1)
    with pytest.raises(IsotropyValueError, match="shrinkage_cov"):
        IsoScoreStar(shrinkage_cov=np.eye(3), n_features=4)



def test_isoscore_star_names_a_wrong_keyword_and_warns_without_sigma_s():
    """IsoScoreStar(shrinkage_sample=X) raised torchmetrics' "Unexpected keyword arguments"; no Σ_S was silent."""
    import warnings

    X = np.random.default_rng(0).normal(size=(100, 4))
    with pytest.raises(TypeError) as info:
        IsoScoreStar(zeta=0.2, shrinkage_sample=X)
    message = str(info.value)
    assert "\n" not in message and "'shrinkage_sample'" in message and "shrinkage_cov, zeta, n_features" in message
    assert "np.cov(sample, rowvar=False)" in message and "array of shape (100, 4)" in message
    with pytest.raises(TypeError, match=r"IsoScore got an unexpected keyword 'shrinkage_cov'; it takes n_features"):
        IsoScore(shrinkage_cov=np.eye(4))
    with pytest.warns(UserWarning) as caught:  # shrinkage_cov is the matrix, not a sample (it read "give a sample")
        IsoScoreStar(zeta=0.2)
    assert [str(w.message) for w in caught] == [
        ("IsoScoreStar: without shrinkage_cov, Σ_S is the identity and the value tracks the vector norms, not isotropy "
        "(near 1 on contextual embeddings whose isoscore is far lower); give shrinkage_cov=, the (n_features, "
        "n_features) covariance matrix of a larger sample (isotropy.torch.shrinkage_covariance(sample) or "
        "np.cov(sample, rowvar=False)).")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric = IsoScoreStar(shrinkage_cov=np.cov(X, rowvar=False), zeta=0.2)
    metric.update(torch.as_tensor(X))
    assert float(metric.compute()) == pytest.approx(isoscore_star(X, shrinkage_cov=np.cov(X, rowvar=False), zeta=0.2),
                                                    abs=1e-12)


# ------------------------------------------------------------------ far from the origin, far from unit scale
@pytest.mark.parametrize("name", MOMENT_CASES)
@pytest.mark.parametrize("transform", ["offset 1e8", "scale 1e150", "scale 1e-150", "scale 1e160"])
def test_far_data_equal_the_function(name, transform):
    """Raw Σxxᵀ − nμμᵀ gave 0.593 for 0.600 at an offset of 1e7 and NaN or −1/(n − 1) at 1e160: now exact."""
    make, reference = CASES[name]
    X = _data(7)
    kind, amount = transform.split()
    X = X + float(amount) if kind == "offset" else X * float(amount)
    metric = make()
    for rows in np.array_split(np.arange(X.shape[0]), 5):
        metric.update(torch.tensor(X[rows]))
    assert float(metric.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_batches_at_different_scales_merge_exactly(name):
    make, reference = CASES[name]
    X = _data(8)
    X[:40] *= 1e150  # one batch dominates: the others underflow relative to it, as in the function
    metric = make()
    for rows in np.array_split(np.arange(X.shape[0]), 3):
        metric.update(torch.tensor(X[rows]))
    assert float(metric.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


# ------------------------------------------------------------------ forward: metric(batch) in a training step
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_works_on_the_first_call_and_with_a_one_row_last_batch(name):
    make, reference = CASES[name]
    X = _data(9, n=121)
    metric = make()  # no n_features
    values = [metric(torch.tensor(X[rows])) for rows in (np.arange(0, 60), np.arange(60, 120), np.arange(120, 121))]
    assert float(values[0]) == pytest.approx(reference(X[:60]), rel=1e-10, abs=1e-10)  # the batch's own value
    assert torch.isnan(values[-1])  # one row alone defines no value; it still counts
    assert float(metric.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


# ------------------------------------------------------------------ DDP: gathered states merge exactly
@pytest.mark.parametrize("name", MOMENT_CASES)
def test_a_gather_across_processes_merges_exactly(name):
    """What torchmetrics' sync does with dist_reduce_fx="cat": stack every process's states, then compute."""
    make, reference = CASES[name]
    X = _data(10) + 1e8
    ranks = [make() for _ in range(3)]
    for metric, rows in zip(ranks, np.array_split(np.arange(X.shape[0]), 3)):
        metric.update(torch.tensor(X[rows]))
    gathered = make()

    def fake_gather(tensor, group=None):
        return [getattr(rank, name_of[id(tensor)]) for rank in ranks]

    gathered.update(torch.tensor(X[:1]))  # some state of this process's shape, replaced by the gather below
    name_of = {id(getattr(gathered, state)): state for state in gathered._defaults}
    gathered._sync_dist(fake_gather)
    assert float(gathered.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


def _fake_sync(gathered, ranks):
    """torchmetrics' sync of ``gathered`` with a gather that returns every metric of ``ranks``' state, as each rank
    would send it (a list state concatenated, or ``tensor([])`` when empty; the real gather pads and trims uneven
    shapes, so each rank's state comes back with its own shape). The gather is called once per state, in order."""
    def sent(rank, state):
        value = getattr(rank, state)
        if isinstance(value, list):
            return torch.cat(value) if value else torch.tensor([], dtype=rank.dtype)
        return value

    calls = iter(list(gathered._reductions))

    def fake_gather(tensor, group=None):
        state = next(calls)
        return [sent(rank, state) for rank in ranks]

    gathered._sync_dist(fake_gather)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"twonn_dimension"}))  # its list state: the real gloo test below
def test_a_gather_with_a_process_that_saw_no_rows_merges_the_others(name):
    """A DDP rank whose share was empty (no n_features, so its states have width 0) failed in torch's stack."""
    make, reference = CASES[name]
    X = _data(11)
    ranks = [make() for _ in range(3)]
    for metric, rows in zip(ranks[1:], np.array_split(np.arange(X.shape[0]), 2)):
        metric.update(torch.tensor(X[rows]))
    gathered = make()  # this process is the one without rows
    _fake_sync(gathered, [gathered, *ranks[1:]])
    assert float(gathered.compute()) == pytest.approx(reference(X), rel=1e-10, abs=1e-10)


def test_a_gather_of_processes_of_different_widths_is_refused_in_one_line():
    ranks = [IsoScore(), IsoScore()]
    ranks[0].update(torch.randn(5, 3, dtype=torch.float64))
    ranks[1].update(torch.randn(5, 4, dtype=torch.float64))
    with pytest.raises(IsotropyValueError, match=r"IsoScore: the processes saw rows of different widths \(\[3, 4\]") \
            as info:
        _fake_sync(ranks[0], ranks)
    assert "\n" not in str(info.value)


def test_rows_a_few_ulps_apart_are_measured_and_identical_rows_refused():
    # rows a few ulps apart were refused as identical (below the floor of their rounded mean); identical rows now sum
    # to an exact 0 (their shift is their own row), so only they are refused
    X = 1e8 + 1e-7 * np.random.default_rng(0).normal(size=(200, 4))
    metric = IsoScore()
    for rows in np.array_split(np.arange(200), 3):
        metric.update(torch.tensor(X[rows]))
    assert float(metric.compute()) == pytest.approx(isoscore(X - X[0]), rel=1e-10)
    same = IsoScore()
    for _ in range(3):
        same.update(torch.tensor(np.tile(X[:1], (5, 1))))
    with pytest.raises(IsotropyValueError, match=r"Got 15 \(numerically\) identical samples"):
        same.compute()


def test_merge_state_of_another_width_is_refused_in_one_line():
    for make in (IsoScore, MeanCosine, TwoNNDimension):
        first, second = make(), make()
        first.update(torch.randn(5, 3, dtype=torch.float64))
        second.update(torch.randn(5, 4, dtype=torch.float64))
        with pytest.raises(IsotropyValueError, match="has 4 features and this metric 3") as info:
            first.merge_state(second)
        assert "\n" not in str(info.value)


def test_metric_from_name_reads_the_table():
    from isotropy.metrics.table import METRICS, metric_names
    from isotropy.training.metrics import metric_from_name

    for name in metric_names(torchmetric=True):
        assert type(metric_from_name(name)).__name__ == METRICS[name].torchmetric
    with pytest.raises(IsotropyValueError, match="Did you mean 'cosine_similarity_mean'"):
        metric_from_name("mean_cosine")


def test_isoscore_star_refuses_a_shrinkage_cov_that_is_not_a_covariance_and_merges_only_its_own_settings():
    # Σ_S = −I was taken and gave a value (isoscore_star refuses it), and an indefinite one too; merge_state of a
    # metric built with another zeta or Σ_S kept the receiver's settings (0.987 one way, 0.781 the other)
    for S, what in ((-torch.eye(6), "smallest eigenvalue of -1 "), (torch.diag(torch.tensor([1.0] * 5 + [-0.5])),
                                                                    "smallest eigenvalue of -0.5 ")):
        with pytest.raises(IsotropyValueError, match=rf"^The 'shrinkage_cov' parameter of IsoScoreStar must be "
                                                     rf"positive semi-definite \(a covariance matrix\)\. Got a {what}"):
            IsoScoreStar(shrinkage_cov=S, zeta=0.3)
    X = torch.tensor(_data(12, d=6))
    S = torch.tensor(np.cov(_data(13, d=6), rowvar=False))
    first, second, other = (IsoScoreStar(shrinkage_cov=S, zeta=0.3), IsoScoreStar(shrinkage_cov=S, zeta=0.5),
                            IsoScoreStar(shrinkage_cov=2 * S, zeta=0.3))
    for metric in (first, second, other):
        metric.update(X)
    for theirs, what in ((second, r"zeta 0\.5, where this metric has 0\.3"), (other, "another shrinkage_cov matrix")):
        with pytest.raises(IsotropyValueError, match=rf"^IsoScoreStar\.merge_state: the incoming metric has other "
                                                     rf"settings \({what}\)"):
            first.merge_state(theirs)
    same = IsoScoreStar(shrinkage_cov=S.clone(), zeta=0.3)
    same.update(X)
    first.merge_state(same)
    assert float(first.compute()) == pytest.approx(
        isoscore_star(torch.cat([X, X]).numpy(), shrinkage_cov=S.numpy(), zeta=0.3), rel=1e-10)


def test_a_real_gloo_sync_with_a_process_that_saw_no_rows(tmp_path):
    """torchrun, 3 CPU processes: the third updates nothing (no n_features). TwoNNDimension aborted the whole job in
    gloo ("Received data size doesn't match expected size": torchmetrics sent a float32 tensor([]) beside float64
    rows), the covariance metrics failed in torch's stack; every rank now reads the value of all 40 rows, and the
    empty process still holds none after the sync."""
    import json

    from _subprocess import run_script

    from isotropy import cosine_similarity_mean, isoscore, participation_ratio, twonn_dimension

    done = run_script("_ddp_metrics_run.py", tmp_path, nproc=3, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    X = np.random.default_rng(0).normal(size=(40, 5))
    expected = {"isoscore": isoscore(X), "participation_ratio": participation_ratio(X),
                "cosine_similarity_mean": cosine_similarity_mean(X), "twonn_dimension": twonn_dimension(X)}
    for rank in range(3):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-12), (rank, name)
            assert got[f"{name}_has_rows_after"] is (rank < 2)


def test_rogue_share_of_rows_that_share_no_direction_is_undefined():
    # isotropic rows read 0.991, 1.041, nan, nan, 0.59 for seeds 0-4 (a mean cosine of ~5e-5, noise, as denominator):
    # a share near 1 read as "one rogue dimension dominates"
    import warnings

    import torch

    from isotropy import rogue_dimension_share
    from isotropy.training import RogueDimensionShare

    for seed in range(5):
        X = np.random.default_rng(seed).normal(size=(2000, 50))
        for data in (X, torch.tensor(X)):
            with pytest.warns(RuntimeWarning, match="not above its sampling noise"):
                assert np.isnan(float(rogue_dimension_share(data)))
        metric = RogueDimensionShare()
        metric.update(torch.tensor(X[:700]))
        metric.update(torch.tensor(X[700:]))
        with pytest.warns(RuntimeWarning, match="not above its sampling noise"):
            assert np.isnan(float(metric.compute()))
    # a small shared offset is above the noise: the share of sums, the same on every path
    X = np.random.default_rng(0).normal(size=(500, 8))
    X[:, 3] += 0.3
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cc = (U.sum(0) ** 2 - (U * U).sum(0)) / (500 * 499)
    metric = RogueDimensionShare()
    metric.update(torch.tensor(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = [rogue_dimension_share(X), float(rogue_dimension_share(torch.tensor(X))), float(metric.compute())]
    assert values == pytest.approx([cc.max() / cc.sum()] * 3, rel=1e-12)


def test_the_mean_cosine_of_identical_rows_is_exactly_one_on_every_path():
    # the sums' rounding read 1.0000000000000007 (cosine_similarity_mean) and 1.0000000000000002 (intra_type_cosine),
    # outside the range of a cosine
    import torch

    from isotropy import CovarianceAccumulator, intra_type_cosine
    from isotropy.training import MeanCosine

    X = np.ones((40, 5))
    metric = MeanCosine()
    metric.update(torch.tensor(X))
    values = [cosine_similarity_mean(X), float(cosine_similarity_mean(torch.tensor(X))), float(metric.compute()),
              CovarianceAccumulator().update(X).cosine_similarity_mean(), intra_type_cosine(X, np.arange(40) % 2)]
    assert values == [1.0] * 5
    assert cosine_similarity_mean(np.array([[1.0, 2.0], [-1.0, -2.0]])) == -1.0  # the lower end, -1/(n - 1)


def test_a_rogue_share_state_without_its_gram_is_refused():
    # a state saved before unit_gram existed loads without complaint: with n_features given its gram read 0 and the
    # noise rule was skipped (isotropic rows read 1.806 instead of NaN); without, compute failed in an IndexError
    import torch

    from isotropy import IsotropyValueError
    from isotropy.training import RogueDimensionShare

    X = torch.randn(2000, 50, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for n_features, empty in ((50, lambda g: torch.zeros_like(g)), (None, lambda g: g.new_zeros((1, 0, 0)))):
        metric = RogueDimensionShare(n_features=n_features)
        metric.update(X)
        metric.unit_gram = empty(metric.unit_gram)
        with pytest.raises(IsotropyValueError, match="saved by a.* version of isotropy"):
            metric.compute()


def test_isoscore_star_of_identical_rows_with_a_shrinkage_cov_is_that_of_sigma_s():
    """Identical rows streamed through the torchmetrics class: with ζ > 0 and Σ_S the shrunk covariance ζ·Σ_S is
    defined and compute gives its IsoScore (from its float64 eigenvalues here), as isoscore_star does; at ζ = 0 it is
    refused (0/0)."""
    rng = np.random.default_rng(5)
    S = np.cov(rng.normal(size=(50, 4)) * [2.0, 1.0, 1.0, 0.3], rowvar=False)
    lam = np.linalg.eigvalsh(0.4 * S)
    expected = (lam.sum() ** 2 / (lam ** 2).sum() - 1) / 3
    metric = IsoScoreStar(shrinkage_cov=torch.tensor(S), zeta=0.4)
    metric.update(torch.full((6, 4), -1.5, dtype=torch.float64))
    metric.update(torch.full((4, 4), -1.5, dtype=torch.float64))
    assert float(metric.compute()) == pytest.approx(expected, rel=1e-12)
    assert float(metric.compute()) == pytest.approx(
        isoscore_star(np.full((10, 4), -1.5), shrinkage_cov=S, zeta=0.4), rel=1e-12)
    at_zero = IsoScoreStar(shrinkage_cov=torch.tensor(S), zeta=0.0)
    at_zero.update(torch.full((6, 4), -1.5, dtype=torch.float64))
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        at_zero.compute()


def test_zero_rows_are_named_by_the_classes_as_by_the_functions():
    """MeanCosine.update and RogueDimensionShare.update said how many all-zero rows a batch held but not where, while
    cosine_similarity_mean and cosine_penalty name the first (a trial): the same words now, with its index."""
    from isotropy import cosine_similarity_mean
    from isotropy.training.metrics import RogueDimensionShare

    X = torch.randn(6, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    X[[2, 4]] = 0.0
    with pytest.raises(IsotropyValueError) as function:
        cosine_similarity_mean(X)
    for metric in (MeanCosine(), RogueDimensionShare()):
        with pytest.raises(IsotropyValueError) as caught:
            metric.update(X)
        said = str(caught.value)
        assert said == str(function.value).replace("cosine_similarity_mean", f"{type(metric).__name__}.update")
        assert said.endswith("Got 2 all-zero row(s) (first at index 2) instead.")


def test_twonn_metric_errors_and_warnings_name_the_metric():
    """TwoNNDimension.compute's errors and warnings named twonn_dimension, a function the user never called ("The 'X'
    parameter of twonn_dimension must have more than n_neighbors=2 distinct points", "twonn_dimension: 6 distance
    ratios kept"); they now name the metric, the rows as those given to update (compute takes no data)."""
    import warnings

    from isotropy._kernels.dimension import TooFewDistinctError

    metric = TwoNNDimension()
    X = torch.zeros(10, 3, dtype=torch.float64)
    X[:5] = 1
    metric.update(X)
    with pytest.raises(TooFewDistinctError) as caught:
        metric.compute()
    assert str(caught.value) == ("The rows given to TwoNNDimension.update must have more than 2 distinct points (TwoNN "
                                 "reads the two nearest neighbours of each). Got 2 distinct points (8 duplicate rows) "
                                 "instead.")
    assert (caught.value.n_neighbors, caught.value.n_distinct) == (2, 2)
    metric = TwoNNDimension(discard_fraction=0.5)
    rows = torch.from_numpy(np.random.default_rng(0).standard_normal((12, 3)))
    metric.update(rows)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        value = float(metric.compute())
    assert value == pytest.approx(twonn_dimension(rows.numpy(), discard_fraction=0.5), rel=1e-12)
    assert [str(w.message).split(":")[0] for w in said] == ["TwoNNDimension.compute"]


@pytest.mark.filterwarnings("ignore:IsoScoreStar. without shrinkage_cov")
@pytest.mark.parametrize("name", sorted(CASES))
def test_plot_draws_the_computed_value_and_a_sequence_of_values(name):
    """``metric.plot()``, torchmetrics' way of drawing a metric, raised a bare NotImplementedError (no message): it
    now draws ``compute()``, or the values given, as torchmetrics' own metrics do. Reference: the pure function."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    make, function = CASES[name]
    X = _data(seed=4)
    metric = make()
    values = [metric(torch.from_numpy(half)) for half in np.array_split(X, 2)]
    fig, ax = metric.plot()
    assert ax.lines[0].get_ydata()[0] == pytest.approx(function(X), rel=1e-9)
    fig_values, ax_values = metric.plot(values)
    assert list(ax_values.lines[0].get_ydata()) == pytest.approx([float(v) for v in values], rel=1e-12)
    assert [float(v) for v in values] == pytest.approx([function(half) for half in np.array_split(X, 2)], rel=1e-9)
    plt.close(fig)
    plt.close(fig_values)


def test_isoscore_star_at_zeta_one_of_a_single_row_is_that_of_sigma_s():
    """With ζ = 1 the shrunk covariance (1 − ζ)·Σ_X + ζ·Σ_S is Σ_S alone, defined for one row, whose Σ_X (ddof=1) is
    not: IsoScoreStar(zeta=1.0)'s forward gave NaN and compute refused ('at least 2 rows'), and isoscore_star refused
    one row. Reference: IsoScore of Σ_S by the closed form ((tr Σ_S)² / ‖Σ_S‖²_F − 1) / (d − 1) of the docstring, and
    the `isoscore` package 2.0.1 on the sample whose covariance Σ_S is (it computes √d in float32: 1e-6)."""
    from IsoScore import IsoScore as pkg

    from isotropy import CovarianceAccumulator

    sample = np.random.default_rng(11).normal(size=(80, 5)) * [3.0, 1.5, 1.0, 0.5, 0.2]
    S = np.cov(sample, rowvar=False)
    expected = (np.trace(S) ** 2 / np.sum(S * S) - 1) / 4
    assert float(pkg.IsoScore(sample)) == pytest.approx(expected, abs=1e-6)
    assert 0.05 < expected < 0.95
    row = np.random.default_rng(12).normal(size=(1, 5))
    assert isoscore_star(row, shrinkage_cov=S, zeta=1.0) == pytest.approx(expected, rel=1e-12)
    H = torch.tensor(row, requires_grad=True)
    value = isoscore_star(H, shrinkage_cov=torch.tensor(S), zeta=1.0)
    assert float(value.detach()) == pytest.approx(expected, rel=1e-12)
    value.backward()  # Σ_S alone: no gradient reaches the row
    assert torch.equal(H.grad, torch.zeros_like(H))
    assert CovarianceAccumulator().update(row).isoscore_star(shrinkage_cov=S, zeta=1.0) == pytest.approx(
        expected, rel=1e-12)
    import dask.array as da

    assert isoscore_star(da.from_array(row), shrinkage_cov=S, zeta=1.0) == pytest.approx(expected, rel=1e-12)
    metric = IsoScoreStar(shrinkage_cov=torch.tensor(S), zeta=1.0)
    assert float(metric(torch.tensor(row))) == pytest.approx(expected, rel=1e-12)  # the batch's own value
    assert float(metric.compute()) == pytest.approx(expected, rel=1e-12)
    # ζ < 1 keeps Σ_X of one row (0/0); ζ = 1 without Σ_S is the identity, 1.0 whatever the row: both stay refused
    with pytest.raises(IsotropyValueError, match="at least 2 samples"):
        isoscore_star(row, shrinkage_cov=S, zeta=0.9)
    with pytest.raises(IsotropyValueError, match="at least 2 samples"):
        isoscore_star(row, zeta=1.0)
    below = IsoScoreStar(shrinkage_cov=torch.tensor(S), zeta=0.9)
    assert torch.isnan(below(torch.tensor(row)))
    with pytest.raises(IsotropyValueError, match="at least 2 rows"):
        below.compute()


@pytest.mark.parametrize(("cls", "rows", "need"), [("IsoScore", 1, 2), ("MeanCosine", 1, 2), ("EffectiveRank", 1, 2),
                                                   ("TwoNNDimension", 2, 3)])
def test_a_batch_value_it_cannot_define_is_nan_said_once(cls, rows, need):
    """`metric(batch)` on an epoch's last batch of one row gave NaN without a word (a plain loop's trial), where
    compute() on one row raises: NaN with one warning per metric, at the user's line; the rows still count."""
    import warnings

    from isotropy import training

    X = torch.randn(40, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    metric = getattr(training, cls)()
    assert math.isfinite(float(metric(X[:20])))
    with pytest.warns(UserWarning) as caught:
        assert math.isnan(float(metric(X[20:20 + rows])))
    assert [(str(w.message), w.filename) for w in caught] == [(
        (f"{cls}(batch) is NaN for a batch that does not define it alone ({rows} row{'' if rows == 1 else 's'}, fewer "
        f"than the {need} it needs); its rows still count towards compute(). Later such batches are not warned of."),
        __file__)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert math.isnan(float(metric(X[30:30 + rows])))
    assert math.isfinite(float(metric.compute()))


@pytest.mark.parametrize("cls", ["IsoScore", "MeanCosine", "EffectiveRank", "TwoNNDimension"])
def test_a_metric_on_the_meta_device_takes_the_device_of_its_first_batch(cls):
    """Built under ``torch.device("meta")`` (a module's deferred init), update on CPU rows failed in torch's
    "Tensor.item() cannot be called on meta tensors" (a trial); moved there after its rows, compute() did too."""
    from isotropy import training

    X = torch.randn(40, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fresh = getattr(training, cls)()
    fresh.update(X)
    with torch.device("meta"):
        metric = getattr(training, cls)()
    metric.update(X)
    assert metric.device == X.device and float(metric.compute()) == float(fresh.compute())
    metric.reset()  # its defaults are on the batch's device too
    metric.update(X)
    assert float(metric.compute()) == float(fresh.compute())
    moved = getattr(training, cls)()
    moved.update(X)
    moved.to("meta")
    with pytest.raises(ValueError, match=rf"^{cls}: its states are on the 'meta' device, which holds no data; update it "
                                         r"with rows on a real device \(a metric on the meta device takes the device "
                                         r"of its next batch\)\.$"):
        moved.compute()
    moved.update(X)  # the rows moved there are gone; the next batch starts again on its device
    assert float(moved.compute()) == float(fresh.compute())
