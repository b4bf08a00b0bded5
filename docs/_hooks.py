"""MkDocs hook: pages contributed by other parts of the project join the navigation when present.

The guides (``scaling.md``, ``models.md``, ``training.md``, ``refusals.md``) are listed in ``nav`` in
mkdocs.yml and are dropped from it, with an info message, while their file is absent. Every
``experiments/*.md`` page that ``nav`` does not list is appended to the Experiments section in
alphabetical order, so a new experiment's page appears without editing mkdocs.yml. Any other missing
page in ``nav`` is left alone, so MkDocs still reports it (an error under ``--strict``).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.isotropy")

OPTIONAL_PAGES = {"scaling.md", "models.md", "training.md", "refusals.md"}
EXPERIMENTS_SECTION = "Experiments"


def _paths(nav) -> set[str]:
    """Every page path listed in a (nested) nav."""
    found = set()
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            found |= _paths(value)
        elif isinstance(value, str):
            found.add(value)
    return found


def _drop_missing(nav, docs_dir: Path):
    kept = []
    for entry in nav:
        title, value = next(iter(entry.items())) if isinstance(entry, dict) else (None, entry)
        if isinstance(value, list):
            value = _drop_missing(value, docs_dir)
            if value:
                kept.append({title: value})
            continue
        if value in OPTIONAL_PAGES and not (docs_dir / value).is_file():
            log.info("nav: %s is not written yet; left out of the navigation", value)
            continue
        kept.append(entry)
    return kept


def on_config(config):
    docs_dir = Path(config["docs_dir"])
    nav = _drop_missing(config["nav"], docs_dir)
    listed = _paths(nav)
    extra = sorted(p.relative_to(docs_dir).as_posix() for p in (docs_dir / "experiments").glob("*.md"))
    extra = [p for p in extra if p not in listed]
    for entry in nav:
        if isinstance(entry, dict) and EXPERIMENTS_SECTION in entry:
            entry[EXPERIMENTS_SECTION].extend({Path(p).stem: p} for p in extra)
    config["nav"] = nav
    return config
