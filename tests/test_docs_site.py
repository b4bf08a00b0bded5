"""The documentation site's configuration, LICENSE and CITATION.cff.

``mkdocs build --strict`` itself runs in .ci/run; these are the fast checks of what it builds from.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

import isotropy

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def _load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mkdocs_config() -> dict:
    # mkdocs.yml has no custom YAML tags, so the plain loader reads it
    return yaml.safe_load((REPO / "mkdocs.yml").read_text())


def _paths(nav) -> set[str]:
    """Every page path listed in a (nested) nav."""
    found = set()
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found |= _paths(value) if isinstance(value, list) else {value}
    return found


def test_every_page_is_in_the_navigation_of_mkdocs_yml():
    listed = _paths(_mkdocs_config()["nav"])
    # docs/runs/ holds the committed outputs of the runs behind the pages (excluded from the site in mkdocs.yml)
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] != "runs"}
    assert pages - listed == set(), "pages missing from the navigation"
    assert {p for p in listed if not (DOCS / p).is_file()} == set(), "navigation entries without a page"


def test_the_hook_leaves_the_navigation_alone():
    hooks = _load_hooks()
    assert not hasattr(hooks, "on_config") and not hasattr(hooks, "on_nav")


def test_mkdocstrings_reads_numpy_docstrings():
    config = _mkdocs_config()
    plugins = {next(iter(p)) if isinstance(p, dict) else p: p for p in config["plugins"]}
    options = plugins["mkdocstrings"]["mkdocstrings"]["handlers"]["python"]["options"]
    assert options["docstring_style"] == "numpy"
    assert config["strict"] is True


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_api_references_name_real_objects(page):
    """Every ``::: isotropy.x.y`` directive names an object that exists (mkdocstrings would fail the build)."""
    for target in re.findall(r"^::: (isotropy[\w.]*)\s*$", page.read_text(), flags=re.MULTILINE):
        module, _, name = target.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            obj = importlib.import_module(target)
        assert obj is not None


def test_license_is_bsd3_with_the_projects_holder():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, The isotropy developers" in text
    assert 'license = "BSD-3-Clause"' in (REPO / "pyproject.toml").read_text()


def test_citation_matches_the_package():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert str(citation["version"]) == isotropy.__version__
    assert citation["license"] == "BSD-3-Clause"
    assert citation["authors"] == [{"name": "The isotropy developers"}]
    assert {ref["year"] for ref in citation["references"]} <= set(range(2015, 2027))


def test_readme_links_resolve():
    """The README's relative links (to the docs pages, LICENSE, CITATION.cff) point at files."""
    text = (REPO / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)\)", text) if "://" not in t]
    assert len(targets) >= 10
    assert [t for t in targets if not (REPO / t).is_file()] == []


def test_hook_points_lazy_exports_at_their_module():
    hooks = _load_hooks()
    markdown = "::: isotropy.isoscore_star\n\n::: isotropy.io.embeddings.read_embeddings\n::: isotropy.nonexistent\n"
    out = hooks.on_page_markdown(markdown, None, None, None)
    assert out.splitlines() == ["::: isotropy.metrics.isoscore.isoscore_star", "",
                                "::: isotropy.io.embeddings.read_embeddings", "::: isotropy.nonexistent"]


def test_hook_renders_docstring_math_as_mathml():
    hooks = _load_hooks()
    html = ('<div class="doc-contents"><p>.. math:: PR = \\frac{a}{b} &lt; 1</p>'
            "<p>with :math:<code>\\mu_j</code> the mean</p></div>")
    out = hooks.on_page_content(html, None, None, None)
    assert ".. math::" not in out and ":math:" not in out
    assert out.count("<math") == 2 and "<mfrac>" in out and "&#x0003C;" in out  # the unescaped "<" as MathML
    assert '<div class="doc-math"><math' in out


def test_hook_keeps_braces_that_are_heading_text():
    hooks = _load_hooks()
    markdown = "## λ ∈ {−1, 0, +1}\n## Kept {#anchor}\n## Also kept {: .cls}\ntext {x}\n"
    out = hooks.on_page_markdown(markdown, None, None, None).splitlines()
    assert out == ["## λ ∈ &#123;−1, 0, +1&#125;", "## Kept {#anchor}", "## Also kept {: .cls}", "text {x}"]


def test_hook_links_see_also_entries_to_their_api_entry():
    hooks = _load_hooks()

    class Page:
        url = "api/cluster/"

    html = ('<div class="doc-contents"><details class="see-also" open>\n  <summary>See Also</summary>\n'
            "  <p>isoscore_star : shrunk.\nnot_an_api_name : plain.</p>\n</details></div>")
    out = hooks.on_page_content(html, Page(), None, None)
    assert '<a href="../../api/isotropy/#isotropy.metrics.isoscore.isoscore_star"><code>isoscore_star</code></a>' in out
    assert "<code>not_an_api_name</code>: plain." in out


def test_every_command_synopsis_lists_the_packaged_setups():
    """layer-geometry's synopsis left out gemma-wikitext2 and istar's sst2-gemma-cpu, which --help lists."""
    from isotropy.experiments._config import available_setups

    found = 0
    for page in sorted(DOCS.rglob("*.md")):
        for match in re.finditer(r"isotropy run ([\w-]+) \[--setup ([^\]]+)\]", page.read_text(encoding="utf-8")):
            listed = [s for s in match.group(2).split("|") if s != "FILE.yaml"]
            assert sorted(listed) == sorted(available_setups(match.group(1))), (page.name, match.group(1))
            found += 1
    assert found >= 3


def test_the_experiments_page_names_every_status_run_json_takes():
    """docs/experiments/index.md says how run.json ends: every status the runner writes is named there."""
    runner = (REPO / "isotropy" / "experiments" / "_runner.py").read_text()
    statuses = set(re.findall(r'"status": "(\w+)"', runner)) - {"running"}
    assert {"finished", "failed", "interrupted"} <= statuses
    page = " ".join((DOCS / "experiments" / "index.md").read_text().split())
    sentence = page[page.index("Each run writes `run.json`"):].split(";")[0]
    for status in statuses:
        assert status in sentence, (status, sentence)


def _random_state_docstrings():
    """``(module, function, its 'random_state :' line)`` of every function that passes its ``random_state`` to
    ``check_random_state`` (which takes None, an int, a Generator or a RandomState)."""
    import ast

    found = []
    for path in sorted((REPO / "isotropy").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and getattr(c.func, "id", None) ==
                     "check_random_state" and c.args and getattr(c.args[0], "id", None) == "random_state"]
            lines = [line.strip() for line in (ast.get_docstring(node) or "").splitlines()
                     if line.strip().startswith("random_state :")]
            if calls and lines:
                found.append((path.relative_to(REPO).as_posix(), node.name, lines[0]))
    return found


def test_every_random_state_docstring_lists_what_check_random_state_takes():
    """The shared error message says "None, an int, a numpy Generator or a numpy RandomState": so do the docs."""
    found = _random_state_docstrings()
    names = {name for _, name, _ in found}
    assert {"inter_type_cosine", "intra_type_cosine", "extract_token_embeddings"} <= names, names
    for path, name, line in found:
        assert all(word in line for word in ("None", "int", "Generator", "RandomState")), (path, name, line)
