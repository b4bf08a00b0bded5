"""Run the STS comparison of isotropy-enhancing transforms: ``run(config) -> results``.

For every data set the sentences of both sides are embedded, each method is fitted (on those
sentences, ``fit_on: self``, as Rajaee & Pilehvar do, or once on a separate corpus) and applied,
and the cosine similarity of each pair is correlated with the gold score (SentEval's way, per
sub-file and pooled). The isotropy of the transformed embeddings is measured with I(W) and IsoScore.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from isotropy._utils.sampling import subsample_indices
from isotropy.experiments._results import write_json, write_text

__all__ = ["METHODS", "cosine_rows", "embed_texts", "fit_sentences", "make_method", "prepare", "run"]

METHODS = ("Baseline", "Mean", "Mean + PCA", "K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA",
           "Whitening")
POOLINGS = ("sentence-transformers", "mean")


def make_method(name: str, config, *, seed: int):
    """The transformer of a table row (``None`` for the baseline)."""
    from isotropy.transforms import (
        AllButTheTop,
        ClusterCentering,
        ClusterIsotropy,
        Whitening,
    )

    k, D = config.n_clusters, config.n_components
    factories = {
        "Baseline": lambda: None,
        "Mean": lambda: AllButTheTop(n_components=0),
        "Mean + PCA": lambda: AllButTheTop(n_components=config.abtt_components),
        "K-means + Mean": lambda: ClusterCentering(n_clusters=k, random_state=seed),
        "GMM + Mean + PCA": lambda: ClusterIsotropy(k, D, clustering="gmm", random_state=seed),
        "K-means + Mean + PCA": lambda: ClusterIsotropy(k, D, clustering="kmeans", random_state=seed),
        "Whitening": lambda: Whitening(config.whitening_components, eps=config.whitening_eps),
    }
    if name not in factories:
        raise ValueError(f"The 'methods' config entry must list names from {list(METHODS)}. Got {name!r} instead.")
    return factories[name]()


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


def cosine_rows(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``A`` with the same row of ``B`` (0 where a row is zero)."""
    num = np.einsum("ij,ij->i", A, B)
    den = np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def isotropy_metrics(Y: np.ndarray, *, sample: int, seed: int) -> dict:
    """I(W) and IsoScore of the embeddings ``Y`` (on a seeded subsample of ``sample`` rows when larger)."""
    from isotropy import isoscore, partition_isotropy

    if sample and Y.shape[0] > sample:
        Y = Y[subsample_indices(Y.shape[0], sample, random_state=seed)]
    return {"I(W)": float(partition_isotropy(Y)), "IsoScore": float(isoscore(Y))}


def _apply(name, config, X_fit, X, *, seed, fitted=None):
    """Fit method ``name`` on ``X_fit`` and transform ``X``; ``fitted`` caches fits of a shared corpus."""
    if fitted is not None and name in fitted:
        method = fitted[name]
    else:
        method = make_method(name, config, seed=seed)
        if method is not None:
            method.fit(X_fit)
        if fitted is not None:
            fitted[name] = method
    return X.astype(np.float64) if method is None else method.transform(X)


def _load_data(config, data_dir):
    from isotropy.datasets.sts import load_sts

    data, seed = {}, _seed(config)
    for name in config.datasets:
        d = load_sts(name, data_dir=data_dir)
        if config.limit and len(d) > config.limit:
            keep = subsample_indices(len(d), config.limit, random_state=seed)
            d = type(d)(name=d.name, text_a=[d.text_a[i] for i in keep], text_b=[d.text_b[i] for i in keep],
                        scores=d.scores[keep], subsets=d.subsets[keep],
                        source={**d.source, "limit": config.limit, "seed": seed})
        data[name] = d
    return data


def _evaluate(name, d, X, X_fit, config, log, fitted):
    from isotropy.datasets.sts import sts_correlations

    n, seed, rows = len(d), _seed(config), {}
    for method in config.methods:
        start = time.perf_counter()
        Y = _apply(method, config, X if X_fit is None else X_fit, X, seed=seed, fitted=fitted)
        corr = sts_correlations(cosine_rows(Y[:n], Y[n:]), d.scores, d.subsets)
        rows[method] = {**corr, **isotropy_metrics(Y, sample=config.metric_sample, seed=seed),
                        "seconds": round(time.perf_counter() - start, 3)}
        log(f"  {name:6s} {method:22s} Spearman {100 * corr['all']['spearman']:6.2f}  "
            f"I(W) {rows[method]['I(W)']:.3g}  IsoScore {rows[method]['IsoScore']:.3g}")
    return rows


def _sweep(data, embeddings, X_fit, config, log) -> list[dict]:
    from isotropy.datasets.sts import sts_correlations

    points, seed = [], _seed(config)
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
            corr = sts_correlations(cosine_rows(Y[:n], Y[n:]), d.scores, d.subsets)
            point = {"dataset": name, "param": param, "value": value, "n_clusters": cfg.n_clusters,
                     "n_components": cfg.n_components, "pearson": corr["all"]["pearson"],
                     "spearman": corr["all"]["spearman"],
                     **isotropy_metrics(Y, sample=config.metric_sample, seed=seed)}
            points.append(point)
            log(f"  sweep {name} {param}={value}: Spearman {100 * point['spearman']:.2f} I(W) {point['I(W)']:.3g}")
    return points


def _seed(config) -> int:
    """The run's one seed (data-set sample, fitting corpus sample, clustering, metric sample)."""
    return int(config.seeds[0])


def _results_config(config) -> dict:
    """The config as ``results.json`` records it (with its ``seed``; ``sweep: {}`` for none), for the report."""
    return {**config.model_dump(), "seed": _seed(config),
            "sweep": {} if config.sweep is None else config.sweep.model_dump()}


def _check_model(model: str) -> None:
    import os

    from isotropy.models.encoders import resolve_model

    location = resolve_model(model)
    offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "") \
        not in ("", "0")
    if not Path(location).is_dir() and (offline or Path(model).expanduser().is_absolute() or model.startswith(".")):
        raise FileNotFoundError(f"The 'model' setting of sts-isotropy is {model!r}: not a local model directory "
                                f"nor the packaged all-MiniLM-L6-v2{' (and the model hub is offline)' if offline else ''}.")


def prepare(config, ctx) -> dict:
    """Load the STS data sets and the fitting corpus, check the model: before the results directory is touched."""
    _check_model(config.model)
    for name in [] if config.sweep is None else config.sweep.datasets:
        if name not in config.datasets:
            raise ValueError(f"The 'sweep.datasets' setting of sts-isotropy lists {name!r}, which is not among "
                             f"the evaluated datasets {config.datasets}.")
    data = _load_data(config, ctx.data_dir)
    fit = None
    if config.fit_on != "self":
        fit = fit_sentences(config.fit_on, data_dir=ctx.data_dir, max_sentences=config.fit_max_sentences,
                            seed=_seed(config))
    return {"data": data, "fit": fit}


def run(config, results_dir, ctx) -> dict:
    """Run the comparison; write ``results.json`` and ``results.md`` (figures come from ``plot``)."""
    from isotropy.experiments.sts_isotropy.report import markdown_report

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    device, progress, log = ctx.device, ctx.show_progress, ctx.log
    started = time.perf_counter()
    data = prepared["data"]
    X_fit, fit_source = None, {"fit_on": "self"}
    if prepared["fit"] is not None:
        sentences, fit_source = prepared["fit"]
        log(f"fitting corpus {config.fit_on}: {len(sentences)} sentences")
        X_fit = embed_texts(sentences, config, device=device, progress=progress).astype(np.float64)
    # a separate corpus is fitted once per method (same seed, same fit) and reused for every data set
    embeddings, table, fitted = {}, {}, (None if X_fit is None else {})
    for name, d in data.items():
        log(f"{name}: {len(d)} pairs")
        X = embed_texts(d.sentences(), config, device=device, progress=progress).astype(np.float64)
        embeddings[name] = X
        table[name] = {"n_pairs": len(d), "subsets": d.subset_names, "source": d.source,
                       "methods": _evaluate(name, d, X, X_fit, config, log, fitted)}
    sweep = _sweep(data, embeddings, X_fit, config, log)
    results = {"config": _results_config(config), "fit": fit_source, "n_features": int(next(iter(embeddings.values())).shape[1]),
               "datasets": table, "sweep": sweep, "seconds": round(time.perf_counter() - started, 1)}
    write_json(results_dir / "results.json", results)
    write_text(results_dir / "results.md", markdown_report(results))
    return results


# --- claims: the rules are fixed here, before the numbers are seen (Rajaee & Pilehvar, ACL 2021, slides "Pre-trained
# BERT results" and "Our proposed algorithm in comparison to other studies"; sentence-level transform, see the page) --

_PAPER = "Rajaee & Pilehvar, ACL 2021"
_CLUSTER, _BASE, _GLOBAL = "K-means + Mean + PCA", "Baseline", "Mean + PCA"


def claims(results, results_dir, *, model: str | None = None, reason: str | None = None) -> list:
    """The slides' STS claims for the cluster-based transform; one value per run (the run's one clustering seed)."""
    import math

    from isotropy.experiments._claims import Rule, claim, command_of, not_run, run_config

    rules = {
        "sts": Rule("holds if the mean Spearman × 100 over the data sets rises with K-means + Mean + PCA, in every seed "
                    "and across the interval; does not hold if it falls throughout", above=0.0),
        "isotropy": Rule("holds if log10 I(W) rises with K-means + Mean + PCA on every data set, in every seed "
                         "(the smallest rise is above 0)", above=0.0),
        "ranking": Rule("holds if K-means + Mean + PCA beats global Mean + PCA on STS-B (Spearman × 100), in every seed",
                        above=0.0),
    }
    specs = [("cluster-raises-sts", "slide 'Pre-trained BERT results'",
              "The cluster-based transform raises the STS correlations of pre-trained representations.",
              "every data set rises (STS-B 54.09 → 67.50)",
              "mean over the data sets of Spearman × 100, K-means + Mean + PCA minus Baseline", "sts"),
             ("cluster-raises-isotropy", "slide 'Pre-trained BERT results'",
              "The cluster-based transform raises the isotropy I(W).", "every data set rises (STS-B 3.36e-5 → 0.63)",
              "smallest over the data sets of log10 I(W), K-means + Mean + PCA minus Baseline", "isotropy"),
             ("cluster-beats-global-pca", "slide 'Our proposed algorithm in comparison to other studies'",
              "The cluster-based transform beats global Mean + PCA on STS-B.", "67.50 vs 46.67",
              "STS-B Spearman × 100, K-means + Mean + PCA minus Mean + PCA", "ranking")]
    config = run_config(results_dir) if results_dir is not None else {}
    command = (command_of(results_dir, "isotropy run sts-isotropy --data-dir DATA_DIR") if results_dir is not None
               else "isotropy run sts-isotropy --data-dir DATA_DIR")
    model = model or str(config.get("model", "–"))
    table = (results or {}).get("datasets") or {}

    def spearman(name, method):
        return 100.0 * float(table[name]["methods"][method]["all"]["spearman"])

    values = {}
    if table and all(_CLUSTER in t["methods"] and _BASE in t["methods"] for t in table.values()):
        values["sts"] = sum(spearman(n, _CLUSTER) - spearman(n, _BASE) for n in table) / len(table)
        values["isotropy"] = min(math.log10(table[n]["methods"][_CLUSTER]["I(W)"]) -
                                 math.log10(table[n]["methods"][_BASE]["I(W)"]) for n in table)
        stsb = next((n for n in table if n.lower() in ("stsb", "sts-b", "stsbenchmark")), None)
        if stsb and _GLOBAL in table[stsb]["methods"]:
            values["ranking"] = spearman(stsb, _CLUSTER) - spearman(stsb, _GLOBAL)
    out = []
    for id_, where, text, paper_value, statistic, key in specs:
        if key in values:
            out.append(claim(id=id_, paper=f"{_PAPER}, {where}", claim=text, paper_value=paper_value, model=model,
                             statistic=statistic, values=[values[key]], rule=rules[key], command=command))
        else:
            out.append(not_run(id=id_, paper=f"{_PAPER}, {where}", claim=text, paper_value=paper_value, model=model,
                               statistic=statistic, rule=rules[key], command=command,
                               reason=reason or "the run has no such rows"))
    return out


def report(results, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``results.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "results.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
