"""MkDocs hook: API directives that find their objects, and numpydoc rendered as Markdown.

A ``::: package.Name`` directive whose name the package exports lazily (a ``_EXPORTS`` dict read by
``__getattr__``, as in ``isotropy`` and ``isotropy.training``) is pointed at the defining module,
which mkdocstrings' static analysis cannot find by itself.

It also rewrites the reStructuredText bits of numpydoc docstrings (roles such as ``:func:``,
``.. math::`` blocks, ``.. [1]`` references) that the Markdown renderer would show verbatim.

The numbers and result tables of the pages are markers rendered from the committed run records under docs/runs/;
``python docs/_hooks.py --fill`` writes each rendered text after its marker too, so that the raw Markdown reads.

"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

# Docstrings are numpydoc, whose Notes and References use a few reStructuredText constructs that
# the Markdown renderer shows verbatim. Rewrite them in the rendered HTML of the API pages.
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):(?=<code>)")
_MATH = re.compile(r"<p>\.\. math::\s*(.*?)</p>", flags=re.DOTALL)
_INLINE_MATH = re.compile(r":math:<code>(.*?)</code>", flags=re.DOTALL)


def mathml(latex: str, *, display: bool) -> str:
    """LaTeX (HTML-escaped, as in the rendered page) to MathML, which browsers render natively.

    Converted when the site is built (latex2mathml), so the pages need no script and read offline;
    a formula the converter cannot read is shown as its LaTeX source in a code span, never dropped.
    """
    import html as _html

    from latex2mathml.converter import convert

    source = " ".join(_html.unescape(latex).split())
    try:
        rendered = convert(source, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - the converter raises many kinds; the source is shown instead
        return f"<code>{_html.escape(source)}</code>"
    return f'<div class="doc-math">{rendered}</div>' if display else rendered
_CITATION = re.compile(r"(?:^|(?<=\s)|(?<=<p>))\.\. \[(\d+)\]")
_SEE_ALSO = re.compile(r'(<details class="see-also"[^>]*>\s*<summary>See Also</summary>\s*<p>)(.*?)(</p>)', re.DOTALL)
_SEE_ALSO_ITEM = re.compile(r"^\s*([\w.]+)\s*:\s*(.*)$")


@functools.cache
def _api_anchors() -> dict[str, tuple[str, str]]:
    """``{name: (page url, anchor)}`` for every object an API page documents with ``::: isotropy...``.

    Read from the Markdown sources (so a See Also can link to a page rendered after its own); an
    object is findable by its full path, by the path of its public face (``isotropy.isoscore``) and
    by its bare name.
    """
    anchors: dict[str, tuple[str, str]] = {}
    docs = REPO / "docs"
    for page in sorted(docs.rglob("*.md")):
        url = page.relative_to(docs).with_suffix("").as_posix() + "/"
        url = url.removesuffix("index/")
        for target in re.findall(r"^::: (isotropy[\w.]*)\s*$", page.read_text(), flags=re.MULTILINE):
            match = _DIRECTIVE.match(f"::: {target}")
            full = target
            if match and (module := _lazy_exports(match.group(1)).get(match.group(2))):
                full = f"{module}.{match.group(2)}"
            for key in (full, target, full.rsplit(".", 1)[-1]):
                anchors.setdefault(key, (url, full))
    return anchors


def _relative(from_url: str, to_url: str) -> str:
    depth = from_url.count("/")
    return "../" * depth + to_url


def _see_also_for(page_url: str):
    def render(match) -> str:
        """One ``name : description`` entry of a numpydoc See Also section per line, the name linked to its entry."""
        lines = []
        for line in match.group(2).split("\n"):
            item = _SEE_ALSO_ITEM.match(line)
            if not item:
                lines.append(line)
                continue
            name = item.group(1)
            target = _api_anchors().get(name) or _api_anchors().get(name.rsplit(".", 1)[-1])
            label = f"<code>{name}</code>"
            if target:
                label = f'<a href="{_relative(page_url, target[0])}#{target[1]}">{label}</a>'
            lines.append(f"{label}: {item.group(2)}")
        return match.group(1) + "<br>\n".join(lines) + match.group(3)

    return render


def on_page_content(html, page, config, files):
    if "doc-contents" not in html:  # only pages with mkdocstrings output
        return html
    html = _ROLE.sub("", html)
    html = _SEE_ALSO.sub(_see_also_for(getattr(page, "url", "") or ""), html)
    html = _MATH.sub(lambda m: mathml(m.group(1), display=True), html)
    html = _INLINE_MATH.sub(lambda m: mathml(m.group(1), display=False), html)
    first = True

    def citation(match):
        nonlocal first
        prefix = "" if first else "<br>"
        first = False
        return f"{prefix}[{match.group(1)}]"

    paragraphs = []
    for part in re.split(r"(<p>.*?</p>)", html, flags=re.DOTALL):
        first = True
        paragraphs.append(_CITATION.sub(citation, part) if part.startswith("<p>") else part)
    return "".join(paragraphs)


_DIRECTIVE = re.compile(r"^::: ((?:isotropy)(?:\.\w+)*)\.(\w+)[ \t]*$", flags=re.MULTILINE)
REPO = Path(__file__).resolve().parent.parent


@functools.cache
def _lazy_exports(package: str) -> dict[str, str]:
    """The ``_EXPORTS`` mapping (name -> module) of a package's ``__init__.py``, read without importing it."""
    init = REPO.joinpath(*package.split("."), "__init__.py")
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text()).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def on_page_markdown(markdown, page, config, files):
    def resolve(match):
        package, name = match.group(1), match.group(2)
        module = _lazy_exports(package).get(name)
        return f"::: {module}.{name}" if module else match.group(0)

    markdown = render_claims(markdown, getattr(getattr(page, "file", None), "src_uri", "") or "")
    return _HEADING_BRACES.sub(_keep_braces, _DIRECTIVE.sub(resolve, markdown))


# attr_list reads a trailing "{...}" of a heading as attributes and drops it, even when it is text
# ("λ ∈ {−1, 0, +1}"); braces that do not open an attribute list ({: ...}, {#id}, {.class}, {key=value})
# are written as entities so that the heading keeps them.
_HEADING_BRACES = re.compile(r"^(#{1,6} .*?)\{([^}]*)\}[ \t]*$", flags=re.MULTILINE)


def _keep_braces(match) -> str:
    inner = match.group(2).strip()
    if inner.startswith((":", "#", ".")) or re.fullmatch(r"[\w-]+=\S+( [\w-]+=\S+)*", inner):
        return match.group(0)
    return f"{match.group(1)}&#123;{match.group(2)}&#125;"


# "Paper vs ours" tables are never typed: ``<!-- claims: EXPERIMENT/SETUP -->`` alone on a line of an experiment page is the
# table of docs/runs/EXPERIMENT/SETUP/claims.json (written by the experiment's report), and ``<!-- claims-index -->``
# on the experiments index becomes one table of every claim of every page, in page order, linked to its page;
# ``<!-- run-table: EXPERIMENT/SETUP -->`` is the experiment's own ``markdown_table`` of that run's committed
# results.json (or metrics.json, layer-geometry's name for it): the table its command prints.
_CLAIMS_MARKER = re.compile(r"^<!-- claims: ([\w.-]+)/([\w.-]+) -->[ \t]*$", flags=re.MULTILINE)
_CLAIMS_INDEX = re.compile(r"^<!-- claims-index -->[ \t]*$", flags=re.MULTILINE)
_RUN_TABLE = re.compile(r"^<!-- run-table: ([\w.-]+)/([\w.-]+) -->[ \t]*$", flags=re.MULTILINE)
# ``<!-- run-compare: EXPERIMENT/SETUP_A,SETUP_B,... -->``: the experiment's ``compare_table`` of those committed runs
# (the first is the reference), e.g. how extraction choices move layer-geometry's numbers
_RUN_COMPARE = re.compile(r"^<!-- run-compare: ([\w.-]+)/([\w.,-]+) -->[ \t]*$", flags=re.MULTILINE)


# Numbers in the prose are never typed either: ``<!-- value: EXPERIMENT/SETUP FILE KEY.KEY... SPEC -->`` anywhere in a
# line is that entry of the committed docs/runs/EXPERIMENT/SETUP/FILE (JSON; a key may be a list index), formatted
# with the Python format SPEC (a number's minus written as −; a string, a date say, as it is); a key ``*`` takes every
# entry at that level and the path then starts with ``min:``, ``max:`` or ``mean:`` (``min:setup.per_seed.*.rho``); a
# key ``FIELD=VALUE`` after it keeps the entries whose FIELD is VALUE (``min:runs.*.lambda=-3.accuracy``; numbers
# compare as numbers, ``zeta=0.2`` included; filters that leave one entry need no ``min:``:
# ``runs.*.lambda=3.seed=0.accuracy``; a VALUE may hold a colon: ``condition=istar:-3``; pick a claim by its id,
# ``*.id=isotropy-up.ours``, not by its place, which a new claim would move); a path holding a space (a key such as
# ``K-means + Mean + PCA``) is written in double quotes; ``@minutes`` as the key path is the run's duration from
# run.json's start and end times, with its unit: minutes formatted with SPEC and " min" ("14 min"), or under a minute
# whole seconds and " s" ("28 s"), never "0 min". A last ``×N`` multiplies the value by N before formatting (``×100``:
# a fraction as a percentage, a correlation as the papers' ×100); ``@minutes`` takes none.
_VALUE_MARKER = re.compile(r'<!-- value: ([\w.-]+)/([\w.-]+) ([\w.-]+) ("[^"\n]+"|\S+) (\S+)(?: ×(\d+))? -->')
_AGGREGATES = {"": lambda v: v[0], "min": min, "max": max, "mean": lambda v: sum(v) / len(v)}


def _matches(entry, key: str) -> bool:
    """Whether ``entry`` (a dict) has ``FIELD`` equal to ``VALUE`` for the filter key ``FIELD=VALUE``."""
    field, _, wanted = key.partition("=")
    if not isinstance(entry, dict) or field not in entry:
        return False
    have = entry[field]
    if isinstance(have, (int, float)) and not isinstance(have, bool):
        try:
            return float(wanted) == have
        except ValueError:
            return False
    return str(have) == wanted


def _path_keys(keys: str) -> list[str]:
    """The keys of a marker's path, split at its dots, but for the fraction of a filter's number (``zeta=0.2``)."""
    parts = []
    for part in keys.split("."):
        if parts and re.fullmatch(r"[^=]+=-?\d+", parts[-1]) and re.fullmatch(r"\d+", part):
            parts[-1] += "." + part
        else:
            parts.append(part)
    return parts


def _run_value(match) -> str:
    import datetime
    import json

    experiment, setup, name, path, spec, scale = match.groups()
    path = path.strip('"')
    file = REPO / "docs" / "runs" / experiment / setup / name
    if not file.is_file():
        raise FileNotFoundError(f"value marker {match.group(0)!r}: {file} does not exist")
    data = json.loads(file.read_text(encoding="utf-8"))
    if path == "@minutes":
        if scale:
            raise ValueError(f"value marker {match.group(0)!r}: '@minutes' renders its unit and takes no '×N'")
        start, end = (datetime.datetime.fromisoformat(data[key]) for key in ("started", "ended"))
        seconds = (end - start).total_seconds()
        if seconds < 60:  # whole seconds: "0 min" (or "0.5 min") would say less than the file does
            return f"{seconds:.0f} s"
        return format(seconds / 60, spec) + " min"
    else:
        # the aggregate is a leading "min:", "max:" or "mean:" only: a filter's value may hold a colon ("istar:-3")
        head, colon, rest = path.partition(":")
        if colon and re.fullmatch(r"\w*", head) and head not in _AGGREGATES or colon and head == "":
            raise ValueError(f"value marker {match.group(0)!r}: {head + ':'!r} is not an aggregate; expected 'min:', "
                             f"'max:' or 'mean:' before the path")
        aggregate, keys = (head, rest) if colon and head in _AGGREGATES else ("", path)
        values = [data]
        for key in _path_keys(keys):
            try:
                if key == "*":
                    values = [v for value in values for v in (value.values() if isinstance(value, dict) else value)]
                elif "=" in key:
                    values = [value for value in values if _matches(value, key)]
                    if not values:
                        raise KeyError(key)
                else:
                    values = [value[int(key)] if isinstance(value, list) else value[key] for value in values]
            except (KeyError, IndexError, ValueError, TypeError, AttributeError):
                raise KeyError(f"value marker {match.group(0)!r}: {file} has no entry {path!r} (at {key!r})") from None
        if aggregate not in _AGGREGATES or (aggregate == "" and len(values) != 1) or (aggregate and "*" not in keys):
            raise ValueError(f"value marker {match.group(0)!r}: a path with '*' needs 'min:', 'max:' or 'mean:' (unless "
                             f"its filters leave one entry), and only it")
        value = _AGGREGATES[aggregate](values)
    if scale:
        value = value * int(scale)
    text = format(value, spec)
    return text.replace("-", "−") if isinstance(value, (int, float)) else text  # (a date or a commit keeps its '-')


def _claims_file(experiment: str, setup: str) -> Path:
    path = REPO / "docs" / "runs" / experiment / setup / "claims.json"
    if not path.is_file():
        raise FileNotFoundError(f"claims marker {experiment}/{setup}: {path} does not exist (run the experiment and "
                                f"copy its small outputs to docs/runs/{experiment}/{setup}/)")
    return path


def _run_results(experiment: str, setup: str) -> dict:
    """The committed results of one run: ``results.json``, or ``metrics.json`` (layer-geometry's name for it)."""
    import json

    folder = _claims_file(experiment, setup).parent
    name = next((n for n in ("results.json", "metrics.json") if (folder / n).is_file()), "results.json")
    return json.loads((folder / name).read_text(encoding="utf-8"))


def _run_module(experiment: str):
    import importlib

    return importlib.import_module(f"isotropy.experiments.{experiment.replace('-', '_')}.run")


def _run_table(match) -> str:
    return _run_module(match.group(1)).markdown_table(_run_results(match.group(1), match.group(2)))


def _run_compare(match) -> str:
    named = {setup: _run_results(match.group(1), setup) for setup in match.group(2).split(",")}
    return _run_module(match.group(1)).compare_table(named)


def _page_table(match) -> str:
    from isotropy.experiments._claims import markdown_table, read_claims

    records = read_claims(_claims_file(match.group(1), match.group(2)))
    return _claims_label(match.group(1), match.group(2), records) + "\n\n" + markdown_table(records)


# So that the raw Markdown (GitHub, an editor, a terminal) reads with its numbers, a marker may carry its rendered
# text, which ``python docs/_hooks.py --fill`` writes: a value marker up to ``<!-- /value -->`` on its line
# (``<!-- value: ... -->0.138<!-- /value -->``), a block marker up to its end marker alone on a later line
# (``<!-- /claims -->``, ``<!-- /claims-index -->``, ``<!-- /run-table -->``, ``<!-- /run-compare -->``). The build
# never reads that text: it renders every marker from the run records and replaces the marker and its text alike.
def _span(marker: re.Pattern, end: str) -> re.Pattern:
    """``marker`` with its filled text, if any: the text holds no ``<!--``, so that it never runs into the next
    marker (a bare marker stays bare however many filled ones follow it)."""
    if end == "value":
        tail = r"(?:(?:(?!<!--)[^\n])*<!-- /value -->)?"
    else:
        tail = rf"(?:\n(?:(?!<!--)[\s\S])*?^<!-- /{end} -->[ \t]*$)?"
    return re.compile(marker.pattern + tail, flags=marker.flags)


# (marker, its text and end marker, end name, renderer); the blocks first, whose text then holds no value marker
_KINDS = (
    (_CLAIMS_MARKER, _span(_CLAIMS_MARKER, "claims"), "claims", _page_table),
    (_RUN_TABLE, _span(_RUN_TABLE, "run-table"), "run-table", _run_table),
    (_RUN_COMPARE, _span(_RUN_COMPARE, "run-compare"), "run-compare", _run_compare),
    (_CLAIMS_INDEX, _span(_CLAIMS_INDEX, "claims-index"), "claims-index", lambda _: _claims_index()),
    (_VALUE_MARKER, _span(_VALUE_MARKER, "value"), "value", _run_value),
)
FILL_COMMAND = "python docs/_hooks.py --fill"


def _filled(marker: str, text: str, end: str) -> str:
    """A marker followed by its rendered ``text`` and end marker: a value on the marker's line (it may sit in a
    table cell), a block on lines of its own between blank lines (so that GitHub renders its table)."""
    if end != "value":
        return f"{marker}\n\n{text.strip(chr(10))}\n\n<!-- /{end} -->"
    if "\n" in text or "<!--" in text or "|" in text:
        raise ValueError(f"value marker {marker!r}: its text {text!r} holds a newline, '|' or '<!--', which its line "
                         f"(a table cell, say) cannot carry")
    return f"{marker}{text}<!-- /value -->"


def _replace(pattern: re.Pattern, end: str, render, mode: str):
    """The ``re.sub`` function of one marker kind: the rendered text (``mode="render"``), the marker with it and its
    end marker (``"fill"``) or the marker alone (``"bare"``); the marker's own match goes to ``render``, as before."""
    def replace(span) -> str:
        marker = pattern.match(span.group(0))
        if mode == "bare":
            return marker.group(0)
        text = render(marker)
        return _filled(marker.group(0), text, end) if mode == "fill" else text

    return replace


def render_claims(markdown: str, src_uri: str = "", *, mode: str = "render") -> str:
    """Replace the markers of a page (and any text filled after them) by the values and tables generated from the
    committed run records; ``mode="fill"`` keeps each marker and writes its text after it, ``"bare"`` drops the text."""
    if "<!-- claims" not in markdown and "<!-- run-" not in markdown and "<!-- value:" not in markdown:
        return markdown
    for pattern, span, end, render in _KINDS:
        markdown = span.sub(_replace(pattern, end, render, mode), markdown)
    return markdown


def stale_markers(markdown: str) -> list[tuple[int, str]]:
    """``(line, marker)`` of every marker of a page whose filled text is missing or not what the records give now."""
    stale = []
    for pattern, span, end, render in _KINDS:
        for found in span.finditer(markdown):
            marker = pattern.match(found.group(0))
            if found.group(0) != _filled(marker.group(0), render(marker), end):
                stale.append((markdown.count("\n", 0, found.start()) + 1, marker.group(0)))
    return sorted(stale)


def filled_pages() -> list[Path]:
    """The pages whose markers are filled: README.md and docs/**/*.md but the run outputs under docs/runs/."""
    docs = REPO / "docs"
    return [REPO / "README.md"] + sorted(p for p in docs.rglob("*.md") if p.relative_to(docs).parts[0] != "runs")


def fill(pages=None) -> list[Path]:
    """Write each page's rendered values after its markers, in place; the pages that changed (none on a rerun)."""
    changed = []
    for page in pages or filled_pages():
        text = page.read_text(encoding="utf-8")
        new = render_claims(text, mode="fill")
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def _shown(page: Path) -> Path:
    """A page's path as the messages name it: from the repository's root where it lies in the repository."""
    return page.relative_to(REPO) if REPO in page.parents else page


def main(argv=None) -> int:
    """``python docs/_hooks.py --fill [PAGE ...]``: fill the pages (all by default); ``--check``: list stale markers."""
    import argparse

    parser = argparse.ArgumentParser(prog="python docs/_hooks.py", description=main.__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--fill", action="store_true", help="write the rendered values after the markers, in place")
    action.add_argument("--check", action="store_true", help="list the markers whose filled text is missing or stale")
    parser.add_argument("pages", nargs="*", type=Path, help="pages to fill or check (default: README.md, docs/**/*.md)")
    args = parser.parse_args(argv)
    pages = [page.resolve() for page in args.pages] or filled_pages()
    if args.fill:
        for page in fill(pages):
            print(f"filled {_shown(page)}")
        return 0
    stale = [(page, line, marker) for page in pages for line, marker in stale_markers(page.read_text(encoding="utf-8"))]
    for page, line, marker in stale:
        print(f"{_shown(page)}:{line}: {marker} is not filled with its current value (run {FILL_COMMAND})")
    return 1 if stale else 0


def _inline(text) -> str:
    """``text`` on one line, with the characters Markdown would read as markup escaped."""
    return re.sub(r"([\\`*_\[\]])", r"\\\1", " ".join(str(text).split()))


def _claims_label(experiment: str, setup: str, records) -> str:
    """The line above a page's claims table: the models its records name, the ``--setup`` of its command (the
    experiment's default setup where the command names none) and the seeds of its ``run.json``, so that tables of
    several runs on one page can be told apart: ``**all-MiniLM-L6-v2 ...** (`--setup minilm`, seeds 0, 1, 2):``.

    A record's ``model`` is taken up to its first "; ", after which some records describe the protocol (sts-isotropy:
    "...; the transforms act on pooled sentence vectors, ..."), which the setup and the page already give.
    """
    import json

    names = dict.fromkeys(str(r["model"]).split("; ", 1)[0] for r in records)
    models = "; ".join(f"**{_inline(name)}**" for name in names)
    named = _setup_named(experiment, records)
    details = [f"`--setup {named}`"] if named else []
    run = _claims_file(experiment, setup).parent / "run.json"
    seeds = json.loads(run.read_text(encoding="utf-8")).get("seeds") if run.is_file() else None
    if seeds:
        details.append(("seed " if len(seeds) == 1 else "seeds ") + ", ".join(str(seed) for seed in seeds))
    return models + (f" ({', '.join(details)})" if details else "") + ":"


def _setup_named(experiment: str, records) -> str | None:
    """The ``--setup`` of the records' ``isotropy run`` command (the experiment's default setup where the command
    names none); ``None`` where no record names such a command (e.g. ``pytest tests/...``, a check with no run)."""
    import importlib
    import shlex

    for command in dict.fromkeys(r["command"] for r in records):
        words = shlex.split(command)
        if "run" not in words:
            continue
        named = None
        for i, word in enumerate(words):
            if word == "--setup" and i + 1 < len(words):
                named = words[i + 1]
            elif word.startswith("--setup="):
                named = word.partition("=")[2]
        if named is None:
            package = experiment.replace("-", "_")
            named = importlib.import_module(f"isotropy.experiments.{package}.experiment").EXPERIMENT.default_setup
        return named
    return None


def _interval_kind(record: dict) -> str:
    """What a claim's interval is, from ``interval["how"]``: "seed spread", "bootstrap over items", both, or none."""
    from isotropy.experiments._claims import NOT_MEASURED, REASON_MARK

    how = str((record.get("interval") or {}).get("how") or "").split(REASON_MARK, 1)[0]
    if how.startswith(NOT_MEASURED) or not how:
        return "none (not measured)"
    parts = how.removeprefix("both: ").split("; ") if how.startswith("both: ") else [how]
    kinds = []
    for part in parts:
        kind, _, detail = part.partition(":")
        confidence = re.search(r"(\d+(?:\.\d+)?) % percentile", detail)
        kinds.append(f"{kind} ({confidence.group(1)} %)" if kind.startswith("bootstrap") and confidence else kind)
    return " + ".join(kinds)


def _claims_index() -> str:
    """Every claim of every experiment page, in page order, linked to its page: with the statistic its value is of,
    its number of seeds (the per-seed values the verdict reads) and what its interval is, and a first line counting
    the rows."""
    from isotropy.experiments._claims import VERDICTS, _cell, _number, _verdict, read_claims

    pages = sorted(p for p in (REPO / "docs" / "experiments").glob("*.md") if p.stem not in ("index", "contract"))
    rows, verdicts, runs = [], [], 0
    for page in pages:
        for experiment, setup in _CLAIMS_MARKER.findall(page.read_text(encoding="utf-8")):
            runs += 1
            records = read_claims(_claims_file(experiment, setup))
            named = _setup_named(experiment, records)  # the runs of one model on a page told apart (sts-isotropy's)
            run = f" (`--setup {named}`)" if named else ""
            for r in records:
                verdicts.append(r["verdict"])
                # the statistic 'ours' is a value of: two rows of one claim read alike without it (activation-diagrams'
                # max/median and rogue share of the same claim, one holding and one not)
                rows.append(f"| [{_cell(r['claim'])}]({page.name}) | {_cell(r['paper'])} | {_cell(r['model'])}{run} | "
                            f"{_cell(r.get('statistic') or '–')} | {_cell(_number(r['ours']))} | {r['n_seeds']} | "
                            f"{_cell(_interval_kind(r))} | {_verdict(r)} |")
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)
    summary = f"{len(rows)} claims from {runs} `claims.json` files: {counts}.\n\n"
    header = ("| claim | paper | model | statistic | ours | seeds | interval | verdict |\n"
              "|---|---|---|---|---|---|---|---|\n")
    return summary + header + "\n".join(rows) + "\n"


if __name__ == "__main__":
    import sys

    sys.exit(main())
