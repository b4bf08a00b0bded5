"""GeometryProbe's forward passes (issue 20, item 4): rows length-sorted, each batch padded to its own longest row,
the pooled vectors put back in probe order, the texts tokenised once, and each DDP share embedded exactly."""

from __future__ import annotations

import inspect
import itertools
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("torchmetrics")

from _tiny_models import make_tiny_bert

# float32 forward passes of other batch compositions (other padded widths: other BLAS blockings and reduction
# orders) differ by a few float32 ulps per operation; the tiny BERT's pooled vectors are O(1) (LayerNorm outputs),
# so 1e-5 is ~100 ulps (eps = 1.2e-7). Measured: pooled vectors within 1.2e-7 (1 ulp) of the one-text-at-a-time
# vectors at batch sizes 2, 4 and 32; metric values within 1.0e-6 (twonn_dimension, ~7.7: 1.3e-7 relative) of
# those at batch_size=1.
ATOL = 1e-5
NAMES = ("isoscore", "cosine_similarity_mean", "rogue_dimension_share", "twonn_dimension", "participation_ratio")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import BertModel, BertTokenizerFast

    directory = make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), n_layers=2, hidden_size=16)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "unbelievable", "cats", ".", ","]
    rng = random.Random(0)
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 20))) for _ in range(37)]  # 3 to 22+ tokens, unsorted
    return BertModel.from_pretrained(directory).eval(), BertTokenizerFast.from_pretrained(directory), texts


def _recorder(store):
    """A metric factory whose metric keeps the rows it is given, in the order given (compute: their count)."""
    from torchmetrics import Metric

    class Rows(Metric):
        def __init__(self, batches):
            super().__init__()
            self.add_state("n", default=torch.zeros(()), dist_reduce_fx="sum")
            self.batches = batches

        def update(self, X):
            self.batches.append(X.detach().clone())
            self.n += X.shape[0]

        def compute(self):
            return self.n

    def factory(n_features):
        store.append([])
        return Rows(store[-1])

    return factory


def _pooled_rows(model, tokenizer, texts, **kwargs):
    """``[(n_rows, d) pooled matrix of each layer]`` as GeometryProbe hands them to its metrics."""
    from isotropy.training import GeometryProbe

    store = []
    GeometryProbe(texts, metrics={"rows": _recorder(store)}, **kwargs).set_tokenizer(tokenizer).measure(model)
    return [torch.cat(batches) for batches in store]


def _one_at_a_time(model, tokenizer, texts):
    """Each text alone (no padding), mean-pooled: ``[(n_rows, d) per transformer layer]``."""
    from isotropy.models import pool_hidden_states

    rows = []
    with torch.no_grad():
        for text in texts:
            inputs = tokenizer([text], truncation=True, max_length=128, return_tensors="pt")
            states = model(**inputs, output_hidden_states=True).hidden_states
            rows.append([pool_hidden_states(h, inputs["attention_mask"]) for h in states[1:]])
    return [torch.cat(layer) for layer in zip(*rows)]


def test_sorted_batches_give_the_unpadded_vectors_in_probe_order(tiny):
    model, tokenizer, texts = tiny
    alone = _one_at_a_time(model, tokenizer, texts)
    for batch_size in (1, 4, 32):
        got = _pooled_rows(model, tokenizer, texts, batch_size=batch_size)
        assert len(got) == len(alone) == 2
        for layer, expected in zip(got, alone):
            assert layer.shape == expected.shape == (len(texts), 16)
            torch.testing.assert_close(layer, expected, rtol=0, atol=ATOL)  # row k is text k: order restored
            # rows in another order would differ by O(1): the check above can tell orders apart
            assert (layer[1:] - expected[:-1]).abs().max() > 100 * ATOL


def test_logged_values_equal_those_of_one_row_per_batch(tiny):
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    reference = GeometryProbe(texts, metrics=NAMES, batch_size=1).set_tokenizer(tokenizer).measure(model)
    for batch_size in (4, 32):
        values = GeometryProbe(texts, metrics=NAMES, batch_size=batch_size).set_tokenizer(tokenizer).measure(model)
        assert values.keys() == reference.keys()
        for key, value in reference.items():
            assert values[key] == pytest.approx(value, rel=ATOL, abs=ATOL), key


def test_each_batch_is_padded_to_its_own_longest_row_and_texts_are_tokenised_once(tiny):
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    calls = []

    class Counting:  # a tokenizer that counts its calls
        pad_token_id = tokenizer.pad_token_id

        def __call__(self, *args, **kwargs):
            calls.append(len(args[0]))
            return tokenizer(*args, **kwargs)

    probe = GeometryProbe(texts, metrics=("isoscore",), batch_size=8).set_tokenizer(Counting())
    lengths = probe.rows.lengths
    widths = []
    encode = probe.rows.encode
    probe.rows.encode = lambda rows: widths.append((rows, encode(rows)["input_ids"].shape[1])) or encode(rows)
    probe.measure(model)
    probe.measure(model)
    assert calls == [len(texts)]  # all texts at once, once for both measurements
    batches = [rows for rows, _ in widths[:len(widths) // 2]]
    assert sorted(i for rows in batches for i in rows) == list(range(len(texts)))
    assert all(width == max(lengths[i] for i in rows) for rows, width in widths)  # no padding beyond the batch
    # longest first: every batch's rows are at least as long as the next batch's
    assert all(min(lengths[i] for i in a) >= max(lengths[i] for i in b) for a, b in itertools.pairwise(batches))
    padded = sum(len(rows) * width for rows, width in widths[:len(widths) // 2])
    unsorted = sum(len(texts[k:k + 8]) * max(lengths[k:k + 8]) for k in range(0, len(texts), 8))
    assert padded < unsorted


def test_a_new_tokenizer_retokenises(tiny):
    from isotropy.training import GeometryProbe

    _, tokenizer, texts = tiny
    probe = GeometryProbe(texts, metrics=("isoscore",)).set_tokenizer(tokenizer)
    first = probe.rows.lengths

    class Truncating:  # another tokenizer: at most 4 tokens
        pad_token_id = tokenizer.pad_token_id

        def __call__(self, texts, **kwargs):
            return tokenizer(texts, **{**kwargs, "max_length": 4})

    probe.set_tokenizer(Truncating())
    assert probe.rows.lengths == [min(n, 4) for n in first]


def test_sorting_windows_keep_the_probe_order(tiny, monkeypatch):
    """Windows of a few batches (here 3 rows rounded up to 2 batches of 2): vectors still in probe order."""
    import isotropy.training.probe as probe_module

    model, tokenizer, texts = tiny
    monkeypatch.setattr(probe_module, "_SORT_WINDOW", 3)
    alone = _one_at_a_time(model, tokenizer, texts)
    for layer, expected in zip(_pooled_rows(model, tokenizer, texts, batch_size=2), alone):
        torch.testing.assert_close(layer, expected, rtol=0, atol=ATOL)


@pytest.mark.filterwarnings("ignore:The ``compute`` method of metric IsoScore was called before")
def test_each_rank_embeds_exactly_its_share_and_the_shares_add_up_to_the_probe(tiny):
    from isotropy.training import GeometryProbe
    from isotropy.training.metrics import IsoScore

    model, tokenizer, texts = tiny
    alone = _one_at_a_time(model, tokenizer, texts)
    world = 3
    for rank in range(world):
        store = []
        GeometryProbe(texts, metrics={"rows": _recorder(store)}, batch_size=4).set_tokenizer(tokenizer).measure(
            model, rank=rank, world_size=world)
        for batches, expected in zip(store, alone):
            torch.testing.assert_close(torch.cat(batches), expected[rank::world], rtol=0, atol=ATOL)
    # the metric states of the shares, merged (as the DDP sync sums them), give the whole probe's value
    shares = []
    for rank in range(world):
        shares.append([])

        def keep(d, kept=shares[-1]):
            kept.append(IsoScore(n_features=d))
            return kept[-1]

        GeometryProbe(texts, metrics={"isoscore": keep}, batch_size=4).set_tokenizer(tokenizer).measure(
            model, rank=rank, world_size=world)
    whole = GeometryProbe(texts, metrics=("isoscore",), batch_size=1).set_tokenizer(tokenizer).measure(model)
    for layer in range(2):
        merged = IsoScore(n_features=16)  # a fresh one: a computed metric keeps its value across merge_state
        for share in shares:
            merged.merge_state(share[layer])
        assert float(merged.compute()) == pytest.approx(whole[f"geometry/isoscore/layer_{layer + 1}"], abs=ATOL)


def test_encoded_probes_are_sorted_and_trimmed_to_each_batch(tiny):
    """A dict probe padded on the right far beyond its rows: trailing all-padding columns are cut per batch
    (same vectors); a left-padded probe keeps its width (its last column is real in every row)."""
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    alone = _one_at_a_time(model, tokenizer, texts)
    encoded = tokenizer(texts, padding="max_length", max_length=40, return_tensors="pt")
    store = []
    probe = GeometryProbe(dict(encoded), metrics={"rows": _recorder(store)}, batch_size=8)
    widths = []
    encode = probe.rows.encode
    probe.rows.encode = lambda rows: widths.append(encode(rows)["attention_mask"].shape[1]) or encode(rows)
    probe.measure(model)
    lengths = encoded["attention_mask"].sum(1)
    assert max(widths) == int(lengths.max()) < 40 and min(widths) < max(widths)
    for batches, expected in zip(store, alone):
        torch.testing.assert_close(torch.cat(batches), expected, rtol=0, atol=ATOL)

    tokenizer.padding_side = "left"
    try:
        left = tokenizer(texts, padding="longest", return_tensors="pt")
    finally:
        tokenizer.padding_side = "right"
    probe = GeometryProbe(dict(left), metrics=("isoscore",), batch_size=8)
    assert all(probe.rows.encode(rows)["input_ids"].shape[1] == left["input_ids"].shape[1]
               for rows in ([0, 1, 2], list(range(len(texts)))))


def _forward_rows(model, tokenizer, texts, **kwargs):
    """``(_pooled_rows(...), rows run by the model)``."""
    from transformers import BertModel

    rows_run = []
    forward = BertModel.forward

    def spy(self, *args, **kw):
        rows_run.append(kw["input_ids"].shape[0])
        return forward(self, *args, **kw)

    BertModel.forward = spy
    try:
        got = _pooled_rows(model, tokenizer, texts, **kwargs)
    finally:
        BertModel.forward = forward
    return got, sum(rows_run)


def _assert_copies_and_values(got, alone, pairs):
    """Rows ``a`` and ``b`` of each pair are equal at every layer, and every row is its text's value run alone."""
    for layer, expected in zip(got, alone, strict=True):
        for a, b in pairs:
            assert torch.equal(layer[a], layer[b])
        torch.testing.assert_close(layer, expected, rtol=0, atol=ATOL)


def test_texts_with_the_same_tokens_run_once_and_get_equal_rows(tiny):
    model, tokenizer, texts = tiny
    probe_texts = [*texts[:10], texts[3], texts[3].upper(), texts[7]]  # the tiny BERT tokenizer lower-cases
    got, run = _forward_rows(model, tokenizer, probe_texts, batch_size=4)
    assert run == 10  # 13 rows, 10 distinct token sequences
    _assert_copies_and_values(got, _one_at_a_time(model, tokenizer, probe_texts), [(3, 10), (3, 11), (7, 12)])


def test_texts_repeated_in_later_windows_run_once_and_get_equal_rows(tiny, monkeypatch):
    """Windows of 4 rows (3 rounded up to 2 batches of 2): texts 3 and 7 come back in the third window, and text 3
    again as the whole fourth window, which then runs nothing."""
    import isotropy.training.probe as probe_module

    model, tokenizer, texts = tiny
    monkeypatch.setattr(probe_module, "_SORT_WINDOW", 3)
    probe_texts = [*texts[:10], texts[3], texts[7], texts[3]]
    got, run = _forward_rows(model, tokenizer, probe_texts, batch_size=2)
    assert run == 10  # 13 rows, 10 distinct token sequences
    _assert_copies_and_values(got, _one_at_a_time(model, tokenizer, probe_texts), [(3, 10), (3, 12), (7, 11)])


def test_each_rank_runs_all_rows_of_its_sequences(tiny):
    """Under DDP the rows of one token sequence go to one rank, so they get one vector there."""
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    probe_texts = [*texts[:10], texts[3], texts[7], texts[3].upper(), texts[4]]  # the tokenizer lower-cases
    alone = _one_at_a_time(model, tokenizer, probe_texts)
    sequence = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 7, 3, 4]
    world, covered = 3, []
    for rank in range(world):
        store = []
        probe = GeometryProbe(probe_texts, metrics={"rows": _recorder(store)}, batch_size=4).set_tokenizer(tokenizer)
        share = probe._share(rank, world)
        assert share == [r for r in range(len(probe_texts)) if sequence[r] % world == rank]
        covered += share
        probe.measure(model, rank=rank, world_size=world)
        for batches, expected in zip(store, alone):
            rows = torch.cat(batches)
            torch.testing.assert_close(rows, expected[share], rtol=0, atol=ATOL)
            for a, b in ((3, 10), (3, 12), (7, 11), (4, 13)):
                if a in share:
                    assert torch.equal(rows[share.index(a)], rows[share.index(b)])
    assert sorted(covered) == list(range(len(probe_texts)))


def test_vectors_kept_for_later_windows_are_copies_and_are_dropped_after_their_last_window(tiny, monkeypatch):
    """Only what a later window needs is held between windows: one (d,) copy per layer and text, not the window."""
    import isotropy.training.probe as probe_module
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    monkeypatch.setattr(probe_module, "_SORT_WINDOW", 4)
    probe_texts = [*texts[:12], texts[1], texts[5]]  # windows 0-3, 4-7, 8-11, 12-13: texts 1 and 5 come back last
    probe = GeometryProbe(probe_texts, metrics=("isoscore",), batch_size=2).set_tokenizer(tokenizer)
    batches = probe._pooled(model, probe.rows, list(range(len(probe_texts))), torch.device("cpu"), None)
    held = []
    for _ in batches:
        kept = batches.gi_frame.f_locals["kept"]
        held.append(sorted(kept))
        for vectors in kept.values():
            for v in vectors.values():
                assert v.untyped_storage().nbytes() == v.numel() * v.element_size()  # its own storage
    assert held == [[1], [1, 5], [1, 5], []]  # after each window


def _compositions(n, batch_size):
    """Every cut of ``n`` rows into consecutive batches of at most ``batch_size`` rows, as ``(start, stop)`` tuples."""
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds, start = [], 0
        for k, cut in enumerate(cuts, start=1):
            if cut:
                bounds.append((start, k))
                start = k
        bounds.append((start, n))
        if all(b - a <= batch_size for a, b in bounds):
            yield tuple(bounds)


def test_length_batches_are_the_cheapest_cut_of_at_most_batch_size_rows():
    """Against every cut (brute force): padded positions + pass_cost per batch is least; None: fewest batches,
    then fewest padded positions."""
    from isotropy.training.probe import _length_batches

    rng = random.Random(1)
    for _ in range(200):
        n, batch_size = rng.randint(1, 9), rng.randint(1, 5)
        lengths = tuple(sorted((rng.randint(1, 40) for _ in range(n)), reverse=True))
        for pass_cost in (0, 3, 32, None):
            bounds = _length_batches(lengths, batch_size, pass_cost)
            assert [a for a, _ in bounds[1:]] == [b for _, b in bounds[:-1]] and bounds[0][0] == 0
            assert bounds[-1][1] == n and all(1 <= b - a <= batch_size for a, b in bounds)

            def padded(cut, lengths=lengths):
                return sum((b - a) * lengths[a] for a, b in cut)

            every = list(_compositions(n, batch_size))
            if pass_cost is None:
                fewest = min(len(cut) for cut in every)
                assert len(bounds) == fewest == -(-n // batch_size)
                assert padded(bounds) == min(padded(cut) for cut in every if len(cut) == fewest)
            else:
                assert padded(bounds) + pass_cost * len(bounds) == min(
                    padded(cut) + pass_cost * len(cut) for cut in every)


def test_cpu_batches_end_where_the_lengths_drop(tiny):
    """One long text and seven short ones at batch_size=8: two forward passes on the CPU (the long text alone), not
    one padded to the long text; the vectors are those of each text alone."""
    from isotropy.training import GeometryProbe

    model, tokenizer, _ = tiny
    texts = [" ".join(["unbelievable cats"] * 6), "the cat", "a dog", "the mat", "cats", "a cat sat", "dog .", "on"]
    store = []
    probe = GeometryProbe(texts, metrics={"rows": _recorder(store)}, batch_size=8).set_tokenizer(tokenizer)
    lengths = probe.rows.lengths
    assert lengths[0] == 32 and max(lengths[1:]) <= 5
    widths = []
    encode = probe.rows.encode
    probe.rows.encode = lambda rows: widths.append((sorted(rows), encode(rows)["input_ids"].shape[1])) or encode(rows)
    probe.measure(model)
    assert widths == [([0], 32), (list(range(1, 8)), max(lengths[1:]))]
    for batches, expected in zip(store, _one_at_a_time(model, tokenizer, texts), strict=True):
        torch.testing.assert_close(torch.cat(batches), expected, rtol=0, atol=ATOL)


def test_the_metrics_get_each_window_in_one_update(tiny, monkeypatch):
    """37 rows at batch_size=4 run in several forward passes but reach the metrics in one update (one per sorting
    window: windows of 3 rows, rounded up to 4, give 10 updates), in probe order."""
    import isotropy.training.probe as probe_module

    model, tokenizer, texts = tiny
    alone = _one_at_a_time(model, tokenizer, texts)
    for window, sizes in ((1024, [37]), (3, [4] * 9 + [1])):
        monkeypatch.setattr(probe_module, "_SORT_WINDOW", window)
        store = []
        probe = probe_module.GeometryProbe(texts, metrics={"rows": _recorder(store)}, batch_size=4)
        probe.set_tokenizer(tokenizer).measure(model)
        for batches, expected in zip(store, alone, strict=True):
            assert [len(b) for b in batches] == sizes
            torch.testing.assert_close(torch.cat(batches), expected, rtol=0, atol=ATOL)


def test_a_metrics_warnings_are_given_once_per_layer_not_at_every_measurement(tiny):
    """A metric's warning carries its numbers (the rogue share's "Got a mean cosine similarity of ..."), so Python's
    filter, which repeats a warning whose text differs, gave it at every measurement for every layer of a training
    run (a trial). Each kind is now given once per logged key; the values are still logged at every measurement
    (here the rows' count, and NaN for a metric refused with other numbers each time)."""
    import warnings

    from torchmetrics import Metric

    from isotropy._utils.errors import IsotropyValueError
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    calls = itertools.count()

    class Noisy(Metric):
        def __init__(self, refuse):
            super().__init__()
            self.add_state("n", default=torch.zeros(()), dist_reduce_fx="sum")
            self.refuse = refuse

        def update(self, X):
            self.n += X.shape[0]

        def compute(self):
            call = next(calls)
            if self.refuse:
                raise IsotropyValueError(f"Noisy: undefined. Got {call} instead.")
            warnings.warn(f"Noisy: a shaky value. Got {call} instead.", RuntimeWarning)
            return self.n

    probe = GeometryProbe(texts, metrics={"noisy": lambda d: Noisy(False), "refused": lambda d: Noisy(True)},
                          batch_size=8).set_tokenizer(tokenizer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged = [probe.measure(model) for _ in range(3)]
    said = sorted(str(w.message) for w in caught)
    layers = sorted({key.rsplit("/", 1)[1] for key in logged[0]})
    assert len(layers) == 2 and len(said) == 2 * len(layers), said
    for layer in layers:
        assert sum(f"geometry/noisy/{layer}; later measurements do not repeat it" in text for text in said) == 1
        assert sum(text.startswith(f"GeometryProbe: geometry/refused/{layer} is undefined for this probe (Noisy: "
                                   f"undefined. Got ") for text in said) == 1
    for values in logged:
        assert all(values[f"geometry/noisy/{layer}"] == len(texts) for layer in layers)
        assert all(values[f"geometry/refused/{layer}"] != values[f"geometry/refused/{layer}"] for layer in layers)


def test_a_metrics_warning_is_given_once_when_two_threads_measure_at_once(tiny):
    """_warn_once looked for a kind, then added it: two threads giving the same warning at once could both look
    before either added, and both gave it. A category whose hash yields the GIL (a sleep) makes that interleaving
    happen every time; the claim is now one dict.setdefault, and the warning is given once."""
    import threading
    import time
    import warnings

    from isotropy.training import GeometryProbe

    class Slow(type):
        def __hash__(cls):
            time.sleep(0.02)  # another thread runs here
            return type.__hash__(cls)

    class SlowWarning(UserWarning, metaclass=Slow):
        pass

    _, tokenizer, texts = tiny
    probe = GeometryProbe(texts, metrics=("isoscore",)).set_tokenizer(tokenizer)
    said = warnings.WarningMessage(SlowWarning("Noisy: shaky. Got 1 instead."), SlowWarning, __file__, 1)
    start = threading.Barrier(4)

    def give():
        start.wait()
        probe._warn_once("geometry/noisy/layer_1", said)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=give) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [str(w.message) for w in caught] == [
        "Noisy: shaky. Got 1 instead. (said once for geometry/noisy/layer_1; later measurements do not repeat it)"]


@pytest.mark.parametrize("through", ["measure", "callback"])
def test_a_metrics_warning_names_the_users_line(tiny, through):
    """Given once (_warn_once), a metric's warning had stacklevel=3: with measure wrapped by torch.no_grad it named
    torch/utils/_contextlib.py whoever called measure, a line the user can neither read nor filter by (found in
    review; the package's rule, _utils/warn.user_stacklevel, is the first frame outside isotropy, torch and
    torchmetrics). Called directly, and through a function given the file name of isotropy's HF callback, as the
    callbacks call it; the reference is the test's own line that makes the call."""
    import math
    import os
    import warnings

    import isotropy
    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    # 4 rows of 16 features: the span warning (a probe of one text 4 times, NaN and its warnings, is now refused)
    probe = GeometryProbe(texts[:4], metrics=["isoscore"], batch_size=8).set_tokenizer(tokenizer)

    def callback():
        return probe.measure(model)

    if through == "callback":
        callback.__code__ = callback.__code__.replace(co_filename=os.path.join(
            os.path.dirname(os.path.abspath(isotropy.__file__)), "training", "hf_callback.py"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        values = callback() if through == "callback" else probe.measure(model)
    assert values and all(math.isfinite(v) for v in values.values())
    span = "GeometryProbe: the probe's 4 rows in 16 features span at most 3 dimensions"
    assert [str(w.message).split(",")[0] for w in caught] == [span]
    assert caught and {(w.filename, w.lineno) for w in caught} == {(__file__, line)}


@pytest.mark.parametrize("kind", ["rows", "dict"])
def test_a_factory_metric_whose_compute_is_not_one_number_is_refused_in_one_line(tiny, kind):
    """A factory's metric whose compute() returns the rows (torchmetrics' CatMetric) or a dict crashed in float() with
    "only one element tensors can be converted to Python scalars", naming neither the metric nor the argument."""
    from torchmetrics import Metric
    from torchmetrics.aggregation import CatMetric, MeanMetric

    from isotropy.training import GeometryProbe

    class Both(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("n", default=torch.zeros(()), dist_reduce_fx="sum")

        def update(self, X):
            self.n += X.shape[0]

        def compute(self):
            return {"n": self.n, "twice": 2 * self.n}

    model, tokenizer, texts = tiny
    factory = (lambda d: CatMetric()) if kind == "rows" else (lambda d: Both())
    probe = GeometryProbe(texts[:5], metrics={"mean": lambda d: MeanMetric(), "bad": factory}, layers="last")
    with pytest.raises(TypeError) as info:
        probe.set_tokenizer(tokenizer).measure(model)
    got = "a tensor of shape (5, 16)" if kind == "rows" else "dict"  # CatMetric: the 5 pooled rows
    assert str(info.value) == ("The 'metrics' parameter of GeometryProbe must map names to factories of metrics whose "
                               f"compute() returns one number (logged as geometry/bad/layer_2). Got {got} from the "
                               "factory of 'bad' instead.")


def test_a_probe_of_no_more_rows_than_features_says_the_bound_once_per_metric(tiny):
    """10 probe texts of a 16-wide model span at most 9 dimensions at every layer: IsoScore is at most 8/15 and PR at
    most 9 whatever the model learns (the packaged MiniLM example probes 256 texts of 384 features). Said once per
    metric for the whole run, not per layer nor per measurement; the logged values stay within the bounds."""
    import warnings

    from isotropy.training import GeometryProbe

    model, tokenizer, texts = tiny
    probe = GeometryProbe(texts[:10], metrics=("isoscore", "participation_ratio", "cosine_similarity_mean"),
                          batch_size=8).set_tokenizer(tokenizer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged = [probe.measure(model) for _ in range(2)]
    span = "GeometryProbe: the probe's 10 rows in 16 features span at most 9 dimensions, so the value is at most"
    assert sorted(str(w.message) for w in caught) == sorted(
        f"{span} {bound} on any such rows (a regular simplex reaches it); measure more rows than features to compare "
        f"spaces by it. (said once for geometry/{name}; later measurements do not repeat it)"
        for name, bound in (("isoscore", "0.533"), ("participation_ratio", "9")))
    for values in logged:
        for key, value in values.items():
            if "/isoscore/" in key:
                assert 0 < value <= 8 / 15 + 1e-6
            if "/participation_ratio/" in key:
                assert 1 <= value <= 9 + 1e-4
    wide = GeometryProbe(texts, metrics=("isoscore",), batch_size=8).set_tokenizer(tokenizer)  # 37 rows > 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide.measure(model)


def test_a_text_probe_tokenised_past_the_models_vocabulary_is_refused_in_one_line(tiny, tmp_path):
    """A tokenizer of a larger vocabulary than the model's (another model's) died in on_train_begin with ~30 frames
    ending in torch's bare IndexError; a dict probe of such ids was refused in one line. Texts are now refused as
    they are, once tokenised, naming the tokenizer that does not match the model."""
    from types import SimpleNamespace

    from transformers import BertConfig, BertModel

    from isotropy import IsotropyValueError
    from isotropy.training import GeometryProbe, HFGeometryCallback

    _, tokenizer, _ = tiny  # 19 tokens
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=10, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=64)).eval()
    texts = ["the cat sat", "the cat", "a dog ran on the mat", "the mat"]  # "a" is 10: past the model's 0..9
    expected = (f"HFGeometryCallback: the probe's 'input_ids' must be below the model's 10 token embeddings (its "
                f"vocabulary). Got 10 in text 2 ('a dog ran on the mat') from its tokenizer "
                f"({type(tokenizer).__name__} {tokenizer.name_or_path!r} of 19 tokens) instead: the tokenizer is not the model's; pass the "
                f"model's own tokenizer.")
    callback = HFGeometryCallback(texts)
    with pytest.raises(IsotropyValueError) as info:
        callback.on_train_begin(None, SimpleNamespace(global_step=0), None, model=model, processing_class=tokenizer)
    assert str(info.value) == expected
    probe = GeometryProbe(texts).set_tokenizer(tokenizer)
    with pytest.raises(IsotropyValueError) as info:
        probe.measure(model)
    assert str(info.value) == expected.replace("HFGeometryCallback", "GeometryProbe")
    assert set(GeometryProbe(texts[:2] + ["the mat", "the cat sat on the mat"]).set_tokenizer(tokenizer).measure(model))


@pytest.mark.parametrize(("caller", "hint"), [
    ("HFGeometryCallback", ("pass tokenizer=... to HFGeometryCallback, or give it to the Trainer, "
                            "Trainer(processing_class=tokenizer), where HFGeometryCallback finds it")),
    ("LightningGeometryCallback", ("pass tokenizer=... to LightningGeometryCallback, or set it as the "
                                   "LightningModule's tokenizer attribute (pl_module.tokenizer = tokenizer) or the "
                                   "datamodule's (trainer.datamodule.tokenizer), where LightningGeometryCallback "
                                   "finds it")),
    ("GeometryProbe", "call GeometryProbe.set_tokenizer(tokenizer) first"),
])
def test_a_text_probe_without_a_tokenizer_names_each_way_to_give_one(tiny, caller, hint):
    """'no tokenizer was found; pass tokenizer=...': in a Trainer the natural fix is Trainer(processing_class=...),
    which the callback picks up; in Lightning the module's (or datamodule's) tokenizer attribute."""
    from isotropy import IsotropyValueError, training

    model, _, texts = tiny
    made = getattr(training, caller)(texts)
    probe = made if caller == "GeometryProbe" else made.probe
    with pytest.raises(IsotropyValueError) as info:
        probe.measure(model)
    assert str(info.value) == (f"{caller}: the probe is a list of texts but no tokenizer was found; {hint} (or pass a "
                               f"dict of encoded tensors as the probe).")


def test_a_probe_of_one_distinct_row_is_refused_when_built(tiny):
    """["same text"] * 10 was taken and then logged NaN with two warnings that contradicted each other (blank texts
    were already refused when built): a probe of fewer than 2 distinct texts (or rows of input_ids, their real
    tokens) is one point, refused in one line with the counts; texts that differ but tokenise the same are refused
    once tokenised."""
    from isotropy import IsotropyValueError
    from isotropy.training import GeometryProbe, HFGeometryCallback, LightningGeometryCallback

    model, tokenizer, _ = tiny
    for maker, caller in ((GeometryProbe, "GeometryProbe"), (HFGeometryCallback, "HFGeometryCallback"),
                          (LightningGeometryCallback, "LightningGeometryCallback")):
        with pytest.raises(IsotropyValueError) as info:
            maker(["same text"] * 10)
        assert str(info.value) == (f"The 'probe' parameter of {caller} must have at least 2 distinct texts. Got 10 "
                                   f"texts, 1 distinct ('same text'), instead: their vectors are one point, whose "
                                   f"geometry is undefined.")
    ids = torch.tensor([[2, 5, 6, 3, 0], [2, 5, 6, 3, 9], [2, 5, 6, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 0]])
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe({"input_ids": ids, "attention_mask": mask})
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must have at least 2 distinct rows of input_ids. "
                               "Got 3 rows of input_ids, 1 distinct, instead: their vectors are one point, whose "
                               "geometry is undefined.")
    mask[1, 4] = 1
    assert GeometryProbe({"input_ids": ids, "attention_mask": mask}).n_rows == 3
    probe = GeometryProbe(["the cat", "the  cat", "The cat"]).set_tokenizer(tokenizer)  # one row of tokens
    with pytest.raises(IsotropyValueError) as info:
        probe.measure(model)
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must have at least 2 texts that tokenise "
                               "differently. Got 3 texts (3 distinct) that its tokenizer makes one row of tokens, "
                               "instead: their vectors are one point, whose geometry is undefined.")
    assert GeometryProbe(["same text"] * 9 + ["other text"]).n_rows == 10  # repeats beside another text: taken
