"""MkDocs hook: API directives that find their objects, and numpydoc rendered as Markdown.

A ``::: package.Name`` directive whose name the package exports lazily (a ``_EXPORTS`` dict read by
``__getattr__``, as in ``isotropy`` and ``isotropy.training``) is pointed at the defining module,
which mkdocstrings' static analysis cannot find by itself.

It also rewrites the reStructuredText bits of numpydoc docstrings (roles such as ``:func:``,
``.. math::`` blocks, ``.. [1]`` references) that the Markdown renderer would show verbatim.

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
_CITATION = re.compile(r"(?:^|(?<=\s)|(?<=<p>))\.\. \[(\d+)\]")
_SEE_ALSO = re.compile(r'(<details class="see-also"[^>]*>\s*<summary>See Also</summary>\s*<p>)(.*?)(</p>)', re.DOTALL)
_SEE_ALSO_ITEM = re.compile(r"^\s*([\w.]+)\s*:\s*(.*)$")


def _see_also(match) -> str:
    """One ``name : description`` entry of a numpydoc See Also section per line."""
    lines = []
    for line in match.group(2).split("\n"):
        item = _SEE_ALSO_ITEM.match(line)
        lines.append(f"<code>{item.group(1)}</code>: {item.group(2)}" if item else line)
    return match.group(1) + "<br>\n".join(lines) + match.group(3)


def on_page_content(html, page, config, files):
    if "doc-contents" not in html:  # only pages with mkdocstrings output
        return html
    html = _ROLE.sub("", html)
    html = _SEE_ALSO.sub(_see_also, html)
    html = _MATH.sub(lambda m: f'<div class="doc-math">{" ".join(m.group(1).split())}</div>', html)
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

    return _DIRECTIVE.sub(resolve, markdown)
