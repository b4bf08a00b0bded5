"""Rajaee & Pilehvar's own level: the transforms fitted on *token* states, every token transformed, then pooled.

The paper (ACL 2021, slide "Proposed Method") clusters the word (token) representations, removes
each cluster's mean and its dominant directions, and builds sentence vectors from the transformed
tokens. The main table of ``sts-isotropy`` transforms pooled sentence vectors instead; this module
runs the paper's order on the data sets of ``token_level.datasets``:

1. the hidden states of every non-padding token at the configured layer (special tokens included,
   as the attention-masked mean pooling includes them), of the evaluated sentences;
2. each method is fitted on token states: those of the evaluated sentences (``fit_on: self``), or
   of the fitting corpus (``fit_on: stsb-train``, ...), at most ``token_level.fit_max_tokens`` of
   them (a seeded sample);
3. every token is transformed, and each sentence vector is the mean of its transformed tokens;
4. cosine per pair, Spearman / Pearson against the gold scores, I(W) and IsoScore of the sentence
   vectors — as the sentence-level rows.

For ``pooling: sentence-transformers`` (the packaged MiniLM, whose own pooling is the mean of the
last layer) the token states are those of the last layer; for ``pooling: mean`` those of ``layer``.
"""

from __future__ import annotations

import re
import time

import numpy as np

from isotropy._utils.sampling import subsample_indices

__all__ = ["DEFAULT_TOKEN_METHODS", "pool_tokens", "run_token_level", "token_claims", "token_states"]

DEFAULT_TOKEN_METHODS = ("Baseline", "Mean + PCA", "K-means + Mean + PCA")


def token_states(texts, config, *, device=None, log=None) -> tuple[np.ndarray, np.ndarray]:
    """``(T, owner)``: the states of every non-padding token of ``texts`` at the configured layer.

    ``T`` has shape (n_tokens, n_features), float32; ``owner[i]`` is the index of the text token
    ``i`` belongs to. Texts are cut at ``config.max_length`` tokens, as the sentence-level pooling;
    special tokens are kept (the mean pooling includes them). The forward pass is ``measure``'s
    (:func:`isotropy.measure.from_model.token_hidden_states`).
    """
    from isotropy.measure.from_model import token_hidden_states
    from isotropy.models.contextual import n_transformer_layers
    from isotropy.models.layers import select_layers
    from isotropy.models.loading import load_transformer

    tokenizer, network, _ = load_transformer(config.model, device=device)
    layer = -1 if config.pooling == "sentence-transformers" else int(config.layer)
    (layer,) = select_layers([layer], n_transformer_layers(network.config) + 1, caller="sts-isotropy token_level",
                             name="layer")
    states, owner, *_ = token_hidden_states([str(t) for t in texts], tokenizer, network, [layer],
                                            batch_size=config.batch_size, max_length=config.max_length,
                                            keep_special=True, sample_size=None, rng=None)
    if log is not None:
        log(f"  token states: {len(owner):,} tokens of {len(texts):,} texts at hidden layer {layer}")
    return states[layer], np.asarray(owner, dtype=np.intp)


def pool_tokens(T: np.ndarray, owner: np.ndarray, n_texts: int) -> np.ndarray:
    """The mean of each text's token rows (float64, shape (n_texts, n_features)), as one sparse product."""
    from scipy.sparse import csr_matrix

    counts = np.bincount(owner, minlength=n_texts).astype(np.float64)
    weights = 1.0 / np.maximum(counts, 1)[owner]
    P = csr_matrix((weights, (owner, np.arange(len(owner)))), shape=(n_texts, len(owner)))
    return np.asarray(P @ T.astype(np.float64))


def _transform_in_chunks(method, T: np.ndarray, *, chunk: int = 65536) -> np.ndarray:
    if method is None:
        return T
    return np.vstack([np.asarray(method.transform(T[s:s + chunk]), dtype=np.float32) for s in range(0, len(T), chunk)])


def run_token_level(config, data: dict, fit_texts: dict | None, *, device=None, log=print) -> dict:
    """Every ``token_level.methods`` on ``token_level.datasets`` at the token level, for every seed.

    Parameters
    ----------
    config : StsIsotropyConfig
    data : dict
        The loaded STS data sets by name.
    fit_texts : dict or None
        ``{seed: sentences}`` of the fitting corpus (None: fit on the evaluated sentences' tokens).

    Returns
    -------
    dict
        ``{"datasets": {name: {"n_pairs", "n_tokens", "methods": {method: record}}}, "fit": ...}``
        where a record holds the seed mean of the correlations and isotropy and ``per_seed``.
    """
    from isotropy.experiments.sts_isotropy.claims import BASE, CLUSTER, GLOBAL, _stsb, difference_bootstrap
    from isotropy.experiments.sts_isotropy.methods import (
        RANDOM_METHODS,
        fit_method,
        isotropy_metrics,
        make_method,
        method_record,
        pair_correlations,
        pair_cosines,
    )

    options = config.token_level
    seeds = [int(s) for s in config.seeds]
    fit_states = {}
    if fit_texts is not None:
        done = []
        for seed in seeds:
            same = next((T for texts, T in done if texts == fit_texts[seed]), None)
            if same is None:
                log(f"token level: fitting corpus {config.fit_on}, {len(fit_texts[seed])} sentences (seed {seed})")
                same, _ = token_states(fit_texts[seed], config, device=device, log=log)
                done.append((fit_texts[seed], same))
            fit_states[seed] = same
    cosines, gold = {}, {}  # {seed: {data set: {method: pair cosines}}}, {data set: gold scores}
    out = {"datasets": {}, "fit": "self" if fit_texts is None else config.fit_on,
           "fit_max_tokens": options.fit_max_tokens, "methods": list(options.methods)}
    for name in options.datasets:
        d = data[name]
        n = len(d)
        started = time.perf_counter()
        log(f"token level: {name}, {n} pairs")
        T, owner = token_states(d.sentences(), config, device=device, log=log)
        rows = {m: [] for m in options.methods}
        cos_of = {m: [] for m in options.methods}  # per seed, the pair cosines (the items of the bootstrap)
        pooled = pool_tokens(T, owner, 2 * n)  # the sentence vectors before any transform: their scale
        # a row without a clustering still changes with the seed when the fit or the metrics use a seeded sample
        sampled = len(T) > options.fit_max_tokens or fit_texts is not None or \
            bool(config.metric_sample) and 2 * n > config.metric_sample
        for seed in seeds:
            F = T if fit_texts is None else fit_states[seed]
            F = F[subsample_indices(len(F), options.fit_max_tokens, random_state=[seed, 7])] \
                if len(F) > options.fit_max_tokens else F
            for method_name in options.methods:
                if method_name not in RANDOM_METHODS and seed != seeds[0] and not sampled:
                    rows[method_name].append(rows[method_name][0])  # nothing random: the first seed's row
                    cos_of[method_name].append(cos_of[method_name][0])
                    continue
                method = make_method(method_name, config, seed=seed)
                fit_method(method, method_name, F.astype(np.float64), config)
                Y = pool_tokens(_transform_in_chunks(method, T), owner, 2 * n)
                cos_of[method_name].append(pair_cosines(Y, pooled, n))
                corr = pair_correlations(cos_of[method_name][-1], d.scores, d.subsets)
                rows[method_name].append({**corr, **isotropy_metrics(Y, sample=config.metric_sample, seed=seed)})
                log(f"  token level, seed {seed} {name:6s} {method_name:22s} Spearman "
                    f"{100 * corr['all']['spearman']:6.2f}")
        out["datasets"][name] = {
            "n_pairs": n, "n_tokens": int(T.shape[0]), "seconds": round(time.perf_counter() - started, 1),
            "methods": {m: method_record(rows[m], seeds, random=m in RANDOM_METHODS or sampled)
                        for m in options.methods}}
        for i, seed in enumerate(seeds):
            cosines.setdefault(seed, {})[name] = {m: cos_of[m][i] for m in (BASE, GLOBAL, CLUSTER) if m in cos_of}
        gold[name] = np.asarray(d.scores, dtype=np.float64)
    log("token level: bootstrap over the sentence pairs")
    out["bootstrap"] = {}
    for id_, *_, key in _TOKEN_SPECS:
        names = list(gold) if key == "sts" else [n for n in [_stsb(list(gold))] if n is not None]
        # the ranking claim is STS-B's alone, as its rule says
        boot = difference_bootstrap(cosines, gold, names, BASE if key == "sts" else GLOBAL,
                                    pairs="sentence pairs" if key == "sts" else "STS-B pairs") if names else None
        if boot is not None:
            out["bootstrap"][id_] = boot
    return out


_TOKEN_SPECS = (
    ("token-cluster-raises-sts", "slides 'Proposed Method' and 'Pre-trained BERT results'",
     ("Clustering the token representations and removing each cluster's mean and dominant directions raises the "
     "STS correlation of the pooled sentence vectors."), "STS-B 54.09 → 67.50",
     ("Spearman × 100 of the sentence vectors pooled from transformed tokens, K-means + Mean + PCA minus Baseline, "
     "smallest over the token-level data sets"), "sts"),
    ("token-cluster-beats-global-pca", "slide 'Our proposed algorithm in comparison to other studies'",
     "At the token level, the cluster-based transform beats global Mean + PCA.", "67.50 vs 46.67 (STS-B)",
     ("Spearman × 100 of the sentence vectors pooled from transformed tokens, K-means + Mean + PCA minus Mean + PCA, "
     "on STS-B"), "ranking"),
)


def token_claims(results, results_dir, *, model: str) -> list:
    """The two STS claims at the paper's own level (tokens transformed, then pooled), one value per seed.

    Nothing (``[]``) for a run whose config has no ``token_level`` (it makes no token-level claim); ``results=None``
    (no run) gives the two claims as not measured.
    """
    from isotropy.experiments._claims import claim, command_of, not_run
    from isotropy.experiments.sts_isotropy.claims import BASE, CLUSTER, GLOBAL, PAPER, RULES, _stsb, with_pair_bootstrap

    config = (results or {}).get("config") or {}
    if results is not None and not config.get("token_level"):
        return []  # a run without token_level makes no token-level claim
    command = command_of(results_dir, "isotropy run sts-isotropy --data-dir DATA_DIR")
    table = ((results or {}).get("token_level") or {}).get("datasets") or {}
    # runs written before the token level recorded its bootstrap over the pairs have the seed spread alone
    bootstrap = ((results or {}).get("token_level") or {}).get("bootstrap") or {}
    model = model.replace("the transforms act on pooled sentence vectors", "the transforms act on token vectors, "
                          "pooled afterwards (the paper's order)")
    out = []
    for id_, where, text, paper_value, statistic, key in _TOKEN_SPECS:
        other = BASE if key == "sts" else GLOBAL
        common = {"id": id_, "paper": f"{PAPER}, {where}", "claim": text, "paper_value": paper_value, "model": model,
                  "statistic": statistic, "rule": RULES[key], "command": command}
        if not table or not all(CLUSTER in t["methods"] and other in t["methods"] for t in table.values()):
            out.append(not_run(**common, reason="the run has no token-level rows (token_level: null)"))
            continue
        # the sts rule asks every data set to rise (the smallest rise); the ranking rule, as the slide's table,
        # is STS-B's alone (it once took the mean over the token-level data sets, deciding "on STS-B" on others too)
        names = list(table) if key == "sts" else [n for n in [_stsb(list(table))] if n is not None]
        if not names:
            out.append(not_run(**common, reason="STS-B is not among the token-level data sets"))
            continue
        per = {name: ([r["all"]["spearman"] for r in table[name]["methods"][CLUSTER]["per_seed"]],
                      [r["all"]["spearman"] for r in table[name]["methods"][other]["per_seed"]]) for name in names}
        n_seeds = len(per[names[0]][0])
        values = [100.0 * float(np.min([per[name][0][i] - per[name][1][i] for name in names])) for i in range(n_seeds)]
        if key != "sts":
            common["statistic"] = common["statistic"].replace("on STS-B", f"on {names[0]}")
        elif len(names) == 1:  # one data set: name it
            common["statistic"] = re.sub(r"(smallest|mean) over the token-level data sets", f"on {names[0]}",
                                         common["statistic"])
        else:
            common["statistic"] = common["statistic"].replace("over the token-level data sets",
                                                              f"over the {len(names)} token-level data sets")
        record = claim(**common, values=values)
        boot = bootstrap.get(id_)
        if boot is not None and key != "sts" and len(table) > 1 and "STS-B pairs" not in boot["how"]:
            boot = None  # a run written before the fix bootstrapped the mean over its data sets: not this statistic
        if boot is not None:  # both: the seed spread and the bootstrap over the pairs, computed by run
            if " of the data set" not in boot["how"] and " data sets (of the " not in boot["how"] \
                    and "STS-B pairs" not in boot["how"]:
                # the data sets the pairs come from, as the sentence-level claims say (pair_bootstrap)
                where = (f"of the data set {names[0]}" if len(names) == 1 else
                         f"of the {len(names)} data sets (of the smallest rise)")
                boot = {**boot, "how": boot["how"].replace("sentence pairs", f"sentence pairs {where}", 1)}
            record = with_pair_bootstrap(record, boot, RULES[key], values)
        out.append(record)
    return out
