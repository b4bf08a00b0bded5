"""The slides' STS claims for the cluster-based transform, from an sts-isotropy results dictionary.

The rules are fixed in this code, not typed (written after first results; docs/experiments/contract.md) (Rajaee & Pilehvar, ACL 2021, slides "Pre-trained
BERT results" and "Our proposed algorithm in comparison to other studies"). One value per seed: the
clustering (K-means, GMM) and the samples are drawn per seed, the embeddings are the same for every
seed. Our protocol transforms pooled *sentence* vectors; the paper clusters and transforms the
*token* representations and pools them afterwards: a known difference, stated in every record.

The STS intervals are "both": the seed spread and a percentile bootstrap over the sentence pairs (per
seed, computed by ``run`` from the pairs' cosines and stored in ``results.json`` under ``bootstrap``,
so that the claims can be rebuilt from the committed results alone). The isotropy interval is the
seed spread (a bootstrap of I(W) over sentences would refit nothing but cost an eigendecomposition
per resample and per data set).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["CLUSTER", "RULES", "claims", "difference_bootstrap", "pair_bootstrap", "spearman", "with_pair_bootstrap"]

PAPER = "Rajaee & Pilehvar, ACL 2021"
CLUSTER, BASE, GLOBAL = "K-means + Mean + PCA", "Baseline", "Mean + PCA"
STSB_NAMES = ("stsb", "sts-b", "stsbenchmark")
_COMMAND = "isotropy run sts-isotropy --data-dir DATA_DIR"
_PACKAGED = {"gemma-3-270m": "Gemma 3 270M base (Q4_K_M dequantised to float32)"}


def _rules():
    from isotropy.experiments._claims import Rule

    return {
        "sts": Rule("holds if Spearman × 100 rises with K-means + Mean + PCA on every data set, in every seed and "
                    "across the interval (the smallest rise is above 0); does not hold if the smallest rise is at "
                    "most 0 throughout", above=0.0),
        "isotropy": Rule("holds if log10 I(W) rises with K-means + Mean + PCA on every data set, in every seed "
                         "(the smallest rise is above 0)", above=0.0),
        "ranking": Rule("holds if K-means + Mean + PCA beats global Mean + PCA on STS-B (Spearman × 100), in every seed "
                        "and across the interval", above=0.0),
    }


RULES = _rules()

_SPECS = (
    ("cluster-raises-sts", "slide 'Pre-trained BERT results'",
     "The cluster-based transform raises the STS correlations of pre-trained representations.",
     "every data set rises (STS-B 54.09 → 67.50)",
     ("smallest over the data sets of the rise of Spearman × 100 of the pooled sentence vectors, K-means + Mean + PCA "
      "minus Baseline"), "sts"),
    ("cluster-raises-isotropy", "slide 'Pre-trained BERT results'",
     "The cluster-based transform raises the isotropy I(W).", "every data set rises (STS-B 3.36e-5 → 0.63)",
     ("smallest over the data sets of the rise of log10 I(W) of the pooled sentence vectors, K-means + Mean + PCA "
      "minus Baseline"), "isotropy"),
    ("cluster-beats-global-pca", "slide 'Our proposed algorithm in comparison to other studies'",
     "The cluster-based transform beats global Mean + PCA on STS-B.", "67.50 vs 46.67",
     "STS-B Spearman × 100 of the pooled sentence vectors, K-means + Mean + PCA minus Mean + PCA", "ranking"),
)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ of two 1-d arrays (average ranks for ties; NaN when one is constant)."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / den if den > 0 else float("nan")


def _stsb(names) -> str | None:
    return next((n for n in names if n.lower() in STSB_NAMES), None)


def pair_bootstrap(cosines: dict, gold: dict, *, n_resamples: int = 2000) -> dict:
    """Bootstrap intervals over the sentence pairs of the two STS claims, one resampling per seed.

    Parameters
    ----------
    cosines : dict
        ``{seed: {data set: {method: array of shape (n_pairs,)}}}``: the cosine of each pair after
        Baseline, Mean + PCA and K-means + Mean + PCA.
    gold : dict
        ``{data set: array of shape (n_pairs,)}``.
    n_resamples : int, default=2000

    Returns
    -------
    dict
        ``{claim id: {"low", "high", "how"}}`` (the union over the seeds of the per-seed 95 %
        percentile intervals); a claim whose methods were not run is absent.
    """
    names = list(gold)
    out = {}
    where = (f"of the {len(names)} data sets (of the smallest rise)" if len(names) > 1
             else f"of the data set {names[0]}")
    boot = difference_bootstrap(cosines, gold, names, BASE, pairs=f"sentence pairs {where}", n_resamples=n_resamples)
    if boot is not None:
        out["cluster-raises-sts"] = boot
    stsb = _stsb(names)
    boot = None if stsb is None else difference_bootstrap(cosines, gold, [stsb], GLOBAL, pairs="STS-B pairs",
                                                          n_resamples=n_resamples)
    if boot is not None:
        out["cluster-beats-global-pca"] = boot
    return out


def difference_bootstrap(cosines: dict, gold: dict, names: list, other: str, *, pairs: str = "sentence pairs",
                         n_resamples: int = 2000) -> dict | None:
    """Bootstrap over the sentence pairs of ``100 · (ρ(K-means + Mean + PCA) − ρ(other))``, one resampling per seed.

    ``ρ`` is the Spearman correlation of a data set's pair cosines with its gold scores; the statistic is the
    smallest of the data sets' differences (every one must rise; one data set: its own). All pairs of all
    ``names`` are resampled together and each data set's ρ is computed on its resampled pairs; ``pairs`` names
    them in the interval's ``how`` ("bootstrap over the 1,379 STS-B pairs").
    ``cosines``: ``{seed: {data set: {method: array of shape (n_pairs,)}}}``; ``gold``: ``{data set:
    array}``. ``None`` where a method was not run or a cosine is NaN (a zero vector).
    """
    from isotropy.experiments._claims import bootstrap_interval

    seeds = list(cosines)
    if not seeds or not all(method in cosines[s][n] and not np.isnan(cosines[s][n][method]).any()
                            for s in seeds for n in names for method in (CLUSTER, other)):
        return None
    which = np.concatenate([np.full(len(gold[n]), i) for i, n in enumerate(names)])
    g = np.concatenate([gold[n] for n in names])
    items = [(np.concatenate([cosines[s][n][CLUSTER] for n in names]),
              np.concatenate([cosines[s][n][other] for n in names]), g, which) for s in seeds]

    def statistic(cluster, base, g, which):
        rises = []
        for i in range(len(names)):
            rows = which == i
            rises.append(spearman(cluster[rows], g[rows]) - spearman(base[rows], g[rows]))
        return 100.0 * float(np.min(rises))

    boot = bootstrap_interval(items, statistic, n_resamples=n_resamples)
    return {**boot, "how": boot["how"].replace("bootstrap over items", f"bootstrap over the {len(g):,} {pairs}")}


def with_pair_bootstrap(record, boot: dict, rule, values):
    """``record`` with the interval "both": its seed spread and ``boot``, the bootstrap over the pairs; the verdict anew."""
    from isotropy.experiments._claims import REASON_MARK, decide_why, with_reason

    seeds_how = str(record.interval["how"]).split(REASON_MARK, 1)[0]  # the seed-only reason is decided anew
    span = {"low": min(record.interval["low"], boot["low"]), "high": max(record.interval["high"], boot["high"]),
            "how": f"both: {seeds_how}; {boot['how']}"}
    verdict, why = decide_why(values, rule, span)
    return dataclasses.replace(record, interval=with_reason(span, why), verdict=verdict)


def _model_text(config: dict) -> str:
    if not config:
        return "–"
    model = str(config.get("model", "–"))
    name = _PACKAGED.get(model, model)
    if config.get("pooling") == "mean":
        layer = config.get("layer", -1)
        pooling = "mean of the last layer" if layer == -1 else f"mean of hidden layer {layer}"
    else:
        pooling = "its sentence-transformers pooling"
    fit_on = config.get("fit_on", "self")
    fit = "fitted on the evaluated sentences" if fit_on == "self" else f"fitted on {fit_on}"
    return (f"{name}, {pooling}; the transforms act on pooled sentence vectors, {fit} "
            f"(the paper transforms token vectors)")


def _per_seed(row: dict) -> list[dict]:
    """The per-seed rows of one method on one data set (a results file of one seed without them: the row)."""
    return row.get("per_seed") or [row]


def _statistic(text: str, names: list) -> str:
    """The statistic's text for these data sets: "smallest over the data sets" names the data set when there is one."""
    if len(names) == 1:
        return text.replace("smallest over the data sets of the rise", f"rise on the one data set ({names[0]})")
    return text.replace("smallest over the data sets", f"smallest over the {len(names)} data sets") if names else text


def _sts_bootstrap(boot: dict | None, names: list) -> dict | None:
    """The stored bootstrap of ``cluster-raises-sts`` if it is of the claim's statistic, the smallest rise.

    Results written before the rule read the smallest rise bootstrapped the mean over the data sets: the
    same number for one data set (whose text said "of the 1 data sets", worded here as one data set), a
    different one for several, which is then not used (the seed spread alone).
    """
    if boot is None:
        return None
    if len(names) == 1:
        return {**boot, "how": boot["how"].replace(" of the 1 data sets", f" of the data set {names[0]}")}
    return boot if "(of the smallest rise)" in boot["how"] else None


def _values(table: dict) -> dict:
    """``{claim key: [value per seed]}`` of the claims whose rows the run has."""
    values = {}
    if not table or not all(CLUSTER in t["methods"] and BASE in t["methods"] for t in table.values()):
        return values

    def seeds_of(name, method):
        return _per_seed(table[name]["methods"][method])

    def spearman_x100(row):
        return 100.0 * float(row["all"]["spearman"])

    names = list(table)
    n_seeds = len(seeds_of(names[0], CLUSTER))
    values["sts"] = [min(spearman_x100(seeds_of(n, CLUSTER)[i]) - spearman_x100(seeds_of(n, BASE)[i]) for n in names)
                     for i in range(n_seeds)]
    if not _underflowed(table):  # (else the claim says why it is not measured: _underflowed)
        values["isotropy"] = [min(math.log10(seeds_of(n, CLUSTER)[i]["I(W)"])
                                  - math.log10(seeds_of(n, BASE)[i]["I(W)"]) for n in names) for i in range(n_seeds)]
    stsb = _stsb(names)
    if stsb and GLOBAL in table[stsb]["methods"]:
        values["ranking"] = [spearman_x100(seeds_of(stsb, CLUSTER)[i]) - spearman_x100(seeds_of(stsb, GLOBAL)[i])
                             for i in range(n_seeds)]
    return values


def _underflowed(table: dict) -> str:
    """Why the isotropy claim's log10 I(W) cannot be taken, or "" when it can.

    I(W) below 5e-324 underflows to 0.0 in float64 (:func:`isotropy.partition_isotropy`): a raw
    decoder's mean-pooled vectors, dominated by one massive-activation direction, reach it (Gemma 3
    270M, layer 3). Its log10 is then only known to be below −323.3, so the rise is not measured
    rather than made up from a bound.
    """
    found = [f"{method} on {name}" for name, block in table.items() for method in (BASE, CLUSTER)
             if method in block["methods"] and any(not float(seed["I(W)"]) > 0
                                                   for seed in _per_seed(block["methods"][method]))]
    if not found:
        return ""
    return (f"I(W) underflows float64 (below 5e-324: 0.0) for {', '.join(found)}, so its log10 is not measured")


def _undefined(table: dict) -> dict:
    """``{claim key: text}`` of the STS claims whose rows left pairs out (an undefined cosine: a zero vector).

    Such rows are correlations over fewer pairs than the rows they are compared with: the claim is not
    established, and says how many pairs and why.
    """
    def left_out(names, methods):
        return sum(int(seed.get("n_undefined", 0)) for n in names for m in methods if m in table[n]["methods"]
                   for seed in _per_seed(table[n]["methods"][m]))

    names, stsb = list(table), _stsb(list(table))
    counts = {"sts": left_out(names, (CLUSTER, BASE)), "ranking": left_out([stsb], (CLUSTER, GLOBAL)) if stsb else 0}
    return {key: (f"{count} pair cosine(s) over the seeds are undefined (a sentence vector is zero after the "
                  f"transform: a cluster of at most n_components points), so the rows compared are not over the "
                  f"same pairs") for key, count in counts.items() if count}


def claims(results, results_dir, *, model: str | None = None, reason: str | None = None) -> list:
    """The slides' STS claims for the cluster-based transform, one value per seed (see the module docstring)."""
    from isotropy.experiments._claims import (
        REASON_MARK,
        claim,
        command_of,
        not_run,
        run_config,
        with_reason,
    )

    config = (results or {}).get("config") or run_config(results_dir)
    command = command_of(results_dir, _COMMAND)
    model = model or _model_text(config)
    values = _values((results or {}).get("datasets") or {})
    undefined = _undefined((results or {}).get("datasets") or {})
    bootstrap = dict((results or {}).get("bootstrap") or {})
    names = list((results or {}).get("datasets") or {})
    if "cluster-raises-sts" in bootstrap:
        bootstrap["cluster-raises-sts"] = _sts_bootstrap(bootstrap["cluster-raises-sts"], names)
    out = []
    for id_, where, text, paper_value, statistic, key in _SPECS:
        common = {"id": id_, "paper": f"{PAPER}, {where}", "claim": text, "paper_value": paper_value, "model": model,
                  "statistic": _statistic(statistic, names), "rule": RULES[key], "command": command}
        if key not in values:
            why = (key == "isotropy" and _underflowed((results or {}).get("datasets") or {})) or "the run has no such rows"
            out.append(not_run(**common, reason=reason or why))
            continue
        record = claim(**common, values=values[key])
        if key in undefined:  # measured, over fewer pairs than the rows it is compared with: not comparable
            seeds_how = str(record.interval["how"]).split(REASON_MARK, 1)[0]
            out.append(dataclasses.replace(record, verdict="not established",
                                           interval=with_reason({**record.interval, "how": seeds_how}, undefined[key])))
            continue
        boot = bootstrap.get(id_)
        if boot is not None:  # both: the seed spread and the bootstrap over pairs, computed by run
            record = with_pair_bootstrap(record, boot, RULES[key], values[key])
        out.append(record)
    return out
