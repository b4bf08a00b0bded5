"""Run the STS comparison of isotropy-enhancing transforms: ``run(config) -> results``.

For every data set the sentences of both sides are embedded, each method is fitted (on those
sentences, ``fit_on: self``, as Rajaee & Pilehvar do, or once on a separate corpus) and applied,
and the cosine similarity of each pair is correlated with the gold score (SentEval's way, per
sub-file and pooled). The isotropy of the transformed embeddings is measured with I(W) and IsoScore.

Seeds: the embeddings do not depend on the seed (each data set is encoded once); K-means, the GMM,
the I(W)/IsoScore sample (``metric_sample``) and the fitting-corpus sample (``fit_max_sentences``)
are drawn per seed. The evaluated pairs (``limit``) and the sweep use the first seed only.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from isotropy._utils.sampling import subsample_indices
from isotropy.experiments._results import write_json, write_text
from isotropy.experiments.sts_isotropy.methods import (
    METHODS,
    RANDOM_METHODS,
    cosine_rows,
    fit_method,
    isotropy_metrics,
    make_method,
    method_record,
    pair_correlations,
    pair_cosines,
)

__all__ = ["METHODS", "RANDOM_METHODS", "claims", "compare_table", "cosine_rows", "depends_on_seed", "embed_texts", "fit_sentences",
           "make_method", "markdown_table", "prepare", "report", "run"]

POOLINGS = ("sentence-transformers", "mean")


def embed_texts(texts, config, *, device=None, progress=False) -> np.ndarray:
    """Embed ``texts`` with the configured model and pooling (both cached on disk); float32 (n, d)."""
    from isotropy.models.encoders import encode_mean_pooled, encode_sentences

    if config.pooling == "mean":
        return encode_mean_pooled(texts, model=config.model, device=device, layer=config.layer,
                                  batch_size=config.batch_size, max_length=config.max_length)
    return encode_sentences(texts, model=config.model, device=device, batch_size=config.batch_size,
                            show_progress=progress)


def _split_sentences(words: list[str]) -> list[str]:
    """Cut a tokenised paragraph after each sentence-final ``.``, ``!`` or ``?`` token."""
    out, current = [], []
    for word in words:
        current.append(word)
        if word in {".", "!", "?"}:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return [s for s in out if len(s.split()) >= 3]


def fit_sentences(fit_on: str, *, data_dir=None, max_sentences: int, seed: int) -> tuple[list[str], dict]:
    """Sentences of a separate fitting corpus: STS-B train, WikiText-2 validation, or a text file."""
    from isotropy.datasets.corpora import load_text_file, load_wikitext2
    from isotropy.datasets.sts import load_sts

    if fit_on == "stsb-train":
        data = load_sts("STSB", split="train", data_dir=data_dir)
        sentences, source = data.sentences(), data.source
    elif fit_on == "wikitext-2":
        corpus = load_wikitext2("validation", data_dir=data_dir)
        sentences = [s for line in corpus.lines for s in _split_sentences(line)]
        source = {**corpus.source, "rule": "paragraphs cut after . ! ? tokens; sentences of >= 3 words"}
    else:
        path = Path(fit_on)
        if not path.is_file():
            raise FileNotFoundError(f"The 'fit_on' option must be self, stsb-train, wikitext-2 or a text file (one "
                                    f"sentence a line). Got {fit_on!r}, which is not a file.")
        corpus = load_text_file(path)
        sentences, source = [" ".join(line) for line in corpus.lines], corpus.source
    sentences = [sentences[i] for i in subsample_indices(len(sentences), max_sentences, random_state=seed)]
    return sentences, {**source, "n_sentences": len(sentences)}


def _apply(name, config, X_fit, X, *, seed, fitted=None, key=None):
    """Fit method ``name`` on ``X_fit`` and transform ``X``; ``fitted`` caches fits of a shared corpus under ``key``."""
    if fitted is not None and key in fitted:
        method = fitted[key]
    else:
        method = make_method(name, config, seed=seed)
        fit_method(method, name, X_fit, config)
        if fitted is not None:
            fitted[key] = method
    # float64 rows either way: a transform keeps float32 input in float32, and the committed runs (docs/runs/) were
    # measured on its float64 output
    return X.astype(np.float64) if method is None else method.transform(X.astype(np.float64))


def _load_data(config, data_dir):
    """The STS data sets; ``limit`` draws the same pairs for every seed (with the first seed)."""
    from isotropy.datasets.sts import load_sts

    data, seed = {}, _first_seed(config)
    for name in config.datasets:
        d = load_sts(name, data_dir=data_dir)
        if config.limit and len(d) > config.limit:
            keep = subsample_indices(len(d), config.limit, random_state=seed)
            d = type(d)(name=d.name, text_a=[d.text_a[i] for i in keep], text_b=[d.text_b[i] for i in keep],
                        scores=d.scores[keep], subsets=d.subsets[keep],
                        source={**d.source, "limit": config.limit, "seed": seed})
        data[name] = d
    return data


def depends_on_seed(method: str, config, n_sentences: int, *, fit_varies: bool) -> bool:
    """Whether a row's numbers change with the seed: a clustering, a seeded metric sample or fitting-corpus sample."""
    sampled = bool(config.metric_sample) and n_sentences > config.metric_sample
    return method in RANDOM_METHODS or sampled or fit_varies


def _evaluate(name, d, X, fits, config, log, fitted, *, seed, first: dict, fit_varies: bool):
    """Every method on one data set for one ``seed``: ``{method: (row, cosines)}``.

    A row that does not depend on the seed is computed for the first seed only and reused (``first``).
    """
    n, out = len(d), {}
    X_fit = fits[seed][0]
    for method in config.methods:
        random = depends_on_seed(method, config, X.shape[0], fit_varies=fit_varies)
        if not random and method in first:
            out[method] = first[method]
            continue
        start = time.perf_counter()
        key = (method, seed if (method in RANDOM_METHODS or fit_varies) else None)
        Y = _apply(method, config, X if X_fit is None else X_fit, X, seed=seed, fitted=fitted, key=key)
        cos = pair_cosines(Y, X, n)  # NaN where a vector is zero: left out of the correlations, counted
        corr = pair_correlations(cos, d.scores, d.subsets)
        row = {**corr, **isotropy_metrics(Y, sample=config.metric_sample, seed=seed),
               "seconds": round(time.perf_counter() - start, 3)}
        out[method] = (row, cos)
        left_out = f"  ({corr['n_undefined']} of {n} pairs left out: zero vector)" if "n_undefined" in corr else ""
        log(f"  seed {seed} {name:6s} {method:22s} Spearman {100 * corr['all']['spearman']:6.2f}  "
            f"I(W) {row['I(W)']:.3g}  IsoScore {row['IsoScore']:.3g}{left_out}")
    return out


def _sweep(data, embeddings, X_fit, config, log, *, seed: int) -> list[dict]:
    """K-means + Mean + PCA with one parameter varied at a time, for one seed (the first: the sweep is exploratory)."""
    points = []
    if config.sweep is None:
        return points
    sweep = config.sweep
    for name in sweep.datasets:
        d, X = data[name], embeddings[name]
        n = len(d)
        base = X if X_fit is None else X_fit
        grid = [("n_clusters", k, {"n_clusters": k}) for k in sweep.n_clusters]
        grid += [("n_components", D, {"n_components": D}) for D in sweep.n_components]
        for param, value, override in grid:
            cfg = config.model_copy(update=override)
            if cfg.n_clusters > base.shape[0] or cfg.n_components > base.shape[1]:
                continue
            Y = _apply("K-means + Mean + PCA", cfg, base, X, seed=seed)
            corr = pair_correlations(pair_cosines(Y, X, n), d.scores, d.subsets)
            point = {"dataset": name, "param": param, "value": value, "n_clusters": cfg.n_clusters,
                     "n_components": cfg.n_components, "pearson": corr["all"]["pearson"],
                     "spearman": corr["all"]["spearman"],
                     **isotropy_metrics(Y, sample=config.metric_sample, seed=seed),
                     **({"n_undefined": corr["n_undefined"]} if "n_undefined" in corr else {})}
            points.append(point)
            log(f"  sweep {name} {param}={value}: Spearman {100 * point['spearman']:.2f} I(W) {point['I(W)']:.3g}")
    return points


def _first_seed(config) -> int:
    """The seed of what is drawn once for the whole run: the ``limit`` pairs and the sweep."""
    return int(config.seeds[0])


def _results_config(config) -> dict:
    """The config as ``results.json`` records it (``sweep: {}`` for none), for the report."""
    return {**config.model_dump(), "sweep": {} if config.sweep is None else config.sweep.model_dump()}


def _check_model(config) -> None:
    """Refuse, before any work, a model :func:`resolve_model` cannot find (its one line names what it accepts),
    a ``max_length`` past its positions and, for ``pooling: mean``, a ``layer`` the model does not have.

    Both are checked against the model's config (``config.json``: its positions and layer count), read without the
    weights, so a bad value is the setting's one line before the data sets are read, not the encoder's
    (``encode_mean_pooled``) after them. A config that cannot be read is left to the model's loading,
    which says why in its own line.
    """
    from transformers import AutoConfig

    from isotropy.experiments._encode import check_max_length
    from isotropy.models._quiet import quiet_transformers
    from isotropy.models._safety import NO_REMOTE_CODE
    from isotropy.models.contextual import n_transformer_layers
    from isotropy.models.encoders import resolve_model

    location = resolve_model(config.model)
    try:
        with quiet_transformers():
            model_config = AutoConfig.from_pretrained(location, **NO_REMOTE_CODE)
    except (OSError, ValueError):
        return
    check_max_length(config.max_length, model_config, model=config.model, experiment="sts-isotropy",
                     given=config.was_given("max_length"))
    if config.pooling != "mean":
        return  # the layer is -1 (the config refuses another): the pipeline's own last layer
    try:
        n_layers = n_transformer_layers(model_config)
    except ValueError:  # IsotropyValueError: a config without a layer count
        return
    if not -(n_layers + 1) <= config.layer <= n_layers:
        raise ValueError(f"The 'layer' setting of sts-isotropy must be in [{-(n_layers + 1)}, {n_layers}] for "
                         f"{config.model!r} (0 = the embedding output, 1..{n_layers} its layers, -1 = the last). "
                         f"Got {config.layer} instead.")


def prepare(config, ctx) -> dict:
    """Check the model (and its layer), then load the STS data sets and the fitting corpus (one sample per seed):
    before writing."""
    _check_model(config)
    for name in [] if config.sweep is None else config.sweep.datasets:
        if name not in config.datasets:
            raise ValueError(f"The 'sweep.datasets' setting of sts-isotropy lists {name!r}, which is not among "
                             f"the evaluated datasets {config.datasets}.")
    for name in [] if config.token_level is None else config.token_level.datasets:
        if name not in config.datasets:
            raise ValueError(f"The 'token_level.datasets' setting of sts-isotropy lists {name!r}, which is not among "
                             f"the evaluated datasets {config.datasets}.")
    data = _load_data(config, ctx.data_dir)
    fit = None
    if config.fit_on != "self":
        fit = {int(seed): fit_sentences(config.fit_on, data_dir=ctx.data_dir, max_sentences=config.fit_max_sentences,
                                        seed=int(seed)) for seed in config.seeds}
    return {"data": data, "fit": fit}


def _fit_embeddings(prepared_fit, config, *, device, progress, log) -> tuple[dict, dict, bool]:
    """``({seed: (X_fit or None, sentences)}, fit source, whether the fitting corpus differs between seeds)``."""
    seeds = [int(s) for s in config.seeds]
    if prepared_fit is None:
        return {s: (None, None) for s in seeds}, {"fit_on": "self"}, False
    fits, done = {}, []
    for seed in seeds:
        sentences = prepared_fit[seed][0]
        same = next((X for other, X in done if other == sentences), None)  # the same sample: embedded once
        if same is None:
            log(f"fitting corpus {config.fit_on}: {len(sentences)} sentences (seed {seed})")
            same = embed_texts(sentences, config, device=device, progress=progress).astype(np.float64)
            done.append((sentences, same))
        fits[seed] = (same, sentences)
    return fits, prepared_fit[seeds[0]][1], len(done) > 1


def run(config, results_dir, ctx) -> dict:
    """Run the comparison for every seed; write ``results.json`` and ``results.md`` (figures come from ``plot``).

    The embeddings do not depend on the seed: each data set is encoded once. The rows that depend on
    the seed (K-means, GMM; a seeded I(W)/IsoScore sample or fitting-corpus sample) are computed per
    seed; the others once, and recorded identically for every seed (``depends_on_seed: false``).
    """
    from isotropy.experiments.sts_isotropy.claims import BASE, CLUSTER, GLOBAL, pair_bootstrap
    from isotropy.experiments.sts_isotropy.report import markdown_report

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    device, progress, log = ctx.device, ctx.show_progress, ctx.log
    started = time.perf_counter()
    seeds = [int(s) for s in config.seeds]
    data = prepared["data"]
    fits, fit_source, fit_varies = _fit_embeddings(prepared["fit"], config, device=device, progress=progress, log=log)
    embeddings = {}
    for name, d in data.items():
        log(f"{name}: {len(d)} pairs")
        embeddings[name] = embed_texts(d.sentences(), config, device=device, progress=progress).astype(np.float64)
    # per seed: a separate corpus is fitted once per method and reused for every data set
    rows = {name: {m: [] for m in config.methods} for name in data}
    cosines = {s: {name: {} for name in data} for s in seeds}
    firsts = {name: {} for name in data}
    shared = {}  # fits that do not depend on the seed (a separate corpus, the same for every seed)
    for seed in seeds:
        fitted = None if fits[seed][0] is None else shared
        for name, d in data.items():
            out = _evaluate(name, d, embeddings[name], fits, config, log, fitted, seed=seed, first=firsts[name],
                            fit_varies=fit_varies)
            for method, (row, cos) in out.items():
                rows[name][method].append(row)
                if method in (BASE, GLOBAL, CLUSTER):
                    cosines[seed][name][method] = cos
            if seed == seeds[0]:
                firsts[name].update(out)
    table = {}
    for name, d in data.items():
        table[name] = {"n_pairs": len(d), "subsets": d.subset_names, "source": d.source, "methods": {
            m: method_record(rows[name][m], seeds, random=depends_on_seed(m, config, embeddings[name].shape[0],
                                                                            fit_varies=fit_varies))
            for m in config.methods}}
    sweep = _sweep(data, embeddings, fits[seeds[0]][0], config, log, seed=seeds[0])
    token_level = None
    if config.token_level is not None:  # the paper's own level: tokens transformed, then pooled
        from isotropy.experiments.sts_isotropy.tokens import run_token_level

        fit_texts = None if prepared["fit"] is None else {s: prepared["fit"][s][0] for s in seeds}
        token_level = run_token_level(config, data, fit_texts, device=device, log=log)
    log("bootstrap over the sentence pairs")
    bootstrap = pair_bootstrap(cosines, {name: np.asarray(d.scores, dtype=np.float64) for name, d in data.items()})
    results = {"config": _results_config(config), "seeds": seeds, "fit": fit_source,
               "fit_per_seed": fit_varies, "n_features": int(next(iter(embeddings.values())).shape[1]),
               "datasets": table, "sweep": sweep, "sweep_seed": seeds[0] if sweep else None, "bootstrap": bootstrap,
               "token_level": token_level,
               "seconds": round(time.perf_counter() - started, 1)}
    write_json(results_dir / "results.json", results)
    write_text(results_dir / "results.md", markdown_report(results))
    return results


def claims(results, results_dir, *, model: str | None = None, reason: str | None = None) -> list:
    """The slides' STS claims (:func:`isotropy.experiments.sts_isotropy.claims.claims`)."""
    from isotropy.experiments.sts_isotropy.claims import _model_text
    from isotropy.experiments.sts_isotropy.claims import claims as sts_claims
    from isotropy.experiments.sts_isotropy.tokens import token_claims

    sentence = sts_claims(results, results_dir, model=model, reason=reason)
    config = (results or {}).get("config") or {}
    return sentence + token_claims(results, results_dir, model=model or _model_text(config))


def markdown_table(results: dict) -> str:
    """The docs' run table (``<!-- run-table: sts-isotropy/SETUP -->``): Spearman and isotropy, seed mean and spread."""
    from isotropy.experiments.sts_isotropy.report import markdown_table as table

    return table(results)


def compare_table(named: dict) -> str:
    """The docs' comparison of runs (``<!-- run-compare: sts-isotropy/A,B,... -->``): Spearman × 100 per run."""
    from isotropy.experiments.sts_isotropy.report import compare_table as table

    return table(named, metric="spearman")


def report(results, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``results.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "results.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
