"""The rendered values that README.md and docs/**/*.md carry after their markers, so that the raw Markdown reads.

Every number of the docs is a marker (``<!-- value: ... -->``, ``<!-- claims: ... -->``, ...) that docs/_hooks.py
renders from the committed run records when the site is built; ``python docs/_hooks.py --fill`` writes the rendered
text after each marker too. The build never reads that text, so these checks keep it equal to what the records give.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VALUE = "<!-- value: istar/sst2-cpu results.json summary.*.method=cosreg.isoscore_star_mean .3f -->"
TABLE = "<!-- run-table: istar/sst2-gemma-cpu -->"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages():
    docs = REPO / "docs"
    return [REPO / "README.md"] + sorted(p for p in docs.rglob("*.md") if p.relative_to(docs).parts[0] != "runs")


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_marker_is_filled_with_its_current_value(hooks, page):
    """A changed run record without refilled pages fails here, naming the page, the line and the command."""
    stale = hooks.stale_markers(page.read_text(encoding="utf-8"))
    where = page.relative_to(REPO).as_posix()
    assert not stale, (f"{len(stale)} marker(s) not filled with what the run records give now (run "
                       f"`{hooks.FILL_COMMAND}` and commit the pages):\n"
                       + "\n".join(f"{where}:{line}: {marker}" for line, marker in stale[:20]))


def test_the_pages_list_every_page_the_fill_writes(hooks):
    assert hooks.filled_pages() == _pages()


@pytest.mark.parametrize("page", [p for p in _pages() if "<!-- " in p.read_text(encoding="utf-8")],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_build_renders_a_filled_page_as_the_bare_one(hooks, page):
    """The hook replaces a marker's filled text with the value it renders: nothing is kept twice, nothing differs."""
    filled = page.read_text(encoding="utf-8")
    bare = hooks.render_claims(filled, mode="bare")
    src = page.relative_to(REPO).as_posix()
    assert hooks.render_claims(filled, src) == hooks.render_claims(bare, src)
    assert hooks.render_claims(bare, mode="fill") == filled  # the fill of the bare page: this very page


def test_the_build_never_reads_the_filled_text(hooks):
    value = hooks.render_claims(VALUE)
    table = hooks.render_claims(TABLE)
    stale = f"x {VALUE}9.999<!-- /value --> y\n\n{TABLE}\n\n| typed | table |\n|---|---|\n\n<!-- /run-table -->\nz\n"
    assert hooks.render_claims(stale) == f"x {value} y\n\n{table}\nz\n"
    assert hooks.stale_markers(stale) == [(1, VALUE), (3, TABLE)]


def test_the_fill_is_idempotent_and_corrects_stale_text(hooks):
    page = f"| a | {VALUE} |\n|---|---|\n\n{TABLE}\n\ntext {VALUE}1.0<!-- /value --> and {VALUE} end\n"
    filled = hooks.render_claims(page, mode="fill")
    assert hooks.render_claims(filled, mode="fill") == filled
    assert hooks.stale_markers(filled) == [] and hooks.stale_markers(page) != []
    value = hooks.render_claims(VALUE)
    assert f"| a | {VALUE}{value}<!-- /value --> |" in filled  # the value stays in its table cell
    assert f"text {VALUE}{value}<!-- /value --> and {VALUE}{value}<!-- /value --> end" in filled
    assert f"{TABLE}\n\n{hooks.render_claims(TABLE).strip()}\n\n<!-- /run-table -->\n" in filled
    assert hooks.render_claims(filled, mode="bare") == page.replace("1.0<!-- /value -->", "")


def test_a_value_that_would_break_its_line_is_refused(hooks):
    """A filled value sits on the marker's line, in a table cell say: a '|' or a newline would split the cell."""
    for text in ("a|b", "a\nb", "<!-- c -->"):
        with pytest.raises(ValueError, match="cannot carry"):
            hooks._filled(VALUE, text, "value")


def test_the_fill_command_writes_pages_in_place(hooks, tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(f"{VALUE} and\n\n{TABLE}\n", encoding="utf-8")
    assert hooks.main(["--check", str(page)]) == 1
    assert f"page.md:1: {VALUE} is not filled" in capsys.readouterr().out
    assert hooks.main(["--fill", str(page)]) == 0 and "filled" in capsys.readouterr().out
    assert hooks.stale_markers(page.read_text(encoding="utf-8")) == []
    assert hooks.main(["--fill", str(page)]) == 0 and capsys.readouterr().out == ""  # nothing left to fill
    assert hooks.main(["--check", str(page)]) == 0


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_line_of_prose_starts_with_a_value_marker(page):
    """GitHub (CommonMark) reads a line that starts with ``<!--`` as raw HTML: it ends the paragraph there and shows
    the rest of the line unformatted. A value marker follows a word of its sentence on its line instead."""
    starts, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        fenced ^= line.lstrip().startswith("```")
        if not fenced and line.lstrip().startswith("<!-- value:"):
            starts.append(f"{page.relative_to(REPO).as_posix()}:{number}: {line.strip()[:80]}")
    assert not starts, "lines that start with a value marker:\n" + "\n".join(starts)
