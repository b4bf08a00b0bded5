"""Every ```python block of README.md and docs/**/*.md runs, and the values it shows are the ones printed.

Blocks of one page run in order in one namespace, in a temporary working directory. A line
``<!-- no-test -->`` directly above a fence skips that block (GPU, a real cluster, a long run).
A line ``print(...)  # -> TEXT`` must print exactly ``TEXT``: the numbers shown in the docs are
checked, not only the absence of errors. A ```console block with ``<!-- check-output -->`` directly
above it runs its ``$ isotropy ...`` commands at that point of the page (in the same directory) and
compares what they print with the block: every line, the timing column of the metric table aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
SKIP_MARK = "<!-- no-test -->"
CHECK_MARK = "<!-- check-output -->"
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[\w+-]*)")
CHECKED_PRINT = re.compile(r"^(?P<indent>\s*)print\((?P<args>.*)\)\s*#\s*->\s?(?P<expected>.*?)\s*$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skipped: bool
    checked: bool = False


def extract_blocks(text: str, page: Path) -> list[Block]:
    """Fenced code blocks of a Markdown text, with their language and whether a no-test mark precedes them."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = match["indent"], match["fence"], match["info"].lower()
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        blocks.append(Block(page, i + 1, info, "\n".join(body) + "\n", previous == SKIP_MARK, previous == CHECK_MARK))
        i = j + 1
    return blocks


def instrument(code: str) -> str:
    """Turn each ``print(ARGS)  # -> TEXT`` line into a call that prints and checks the text."""
    out = []
    for line in code.splitlines():
        match = CHECKED_PRINT.match(line)
        if match:
            line = f"{match['indent']}__doc_print__({match['expected']!r}, {match['args']})"
        out.append(line)
    return "\n".join(out) + "\n"


def _doc_print(expected: str, *args, sep=" ", **kwargs):
    text = sep.join(str(arg) for arg in args)
    print(text, **kwargs)
    assert text == expected, f"the docs show {expected!r}, the code printed {text!r}"


# a row of the metric table of `isotropy measure`: name, value, seconds (the seconds depend on the machine)
_TIMED_ROW = re.compile(r"^(?P<row>\S+\s+\S+)\s+\d+\.\d+$")


def _shown(text: str) -> list[str]:
    """The lines of a command's output as compared: whitespace collapsed, a metric row without its seconds."""
    lines = []
    for line in text.splitlines():
        line = " ".join(line.split())
        match = _TIMED_ROW.match(line)
        if line:
            lines.append(match["row"] if match and not line.startswith("metric ") else line)
    return [line.removesuffix(" seconds") if line.startswith("metric ") else line for line in lines]


def check_console(block: Block) -> None:
    """Run each ``$ isotropy ...`` command of ``block`` and compare its output with the lines shown under it."""
    import shlex

    from click.testing import CliRunner

    from isotropy.cli import cli

    commands, current = [], None
    for line in block.code.replace("\\\n", " ").splitlines():
        if line.startswith("$ "):
            current = [line[2:], []]
            commands.append(current)
        elif current is not None:
            current[1].append(line)
    assert commands, f"{_page_id(block.page)}:{block.line}: a checked console block without a '$ ' command"
    for command, shown in commands:
        words = shlex.split(command)
        assert words[0] == "isotropy", f"{_page_id(block.page)}:{block.line}: only isotropy commands are checked"
        result = CliRunner().invoke(cli, words[1:])
        printed = _shown(result.output)
        expected = _shown("\n".join(shown))
        assert printed == expected, (f"{_page_id(block.page)}:{block.line}: `{command}` printed\n"
                                     + "\n".join(printed) + "\nthe docs show\n" + "\n".join(expected))


def _page_id(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


PYTHON_PAGES = [page for page in PAGES
                if any(b.language in ("python", "py") for b in extract_blocks(page.read_text(), page))]


def test_snippet_extraction_finds_blocks_and_marks():
    text = ("intro\n```python\nx = 1\n```\n\n<!-- no-test -->\n```python\nraise SystemExit\n```\n"
            "- item\n\n    ```python\n    y = x + 1\n    ```\n```text\nnot code\n```\n")
    blocks = extract_blocks(text, Path("page.md"))
    assert [(b.language, b.skipped, b.line) for b in blocks] == [
        ("python", False, 2), ("python", True, 7), ("python", False, 12), ("text", False, 15)]
    assert blocks[2].code == "y = x + 1\n"
    checked = extract_blocks("<!-- check-output -->\n```console\n$ isotropy --version\n```\n", Path("p.md"))
    assert [(b.language, b.checked) for b in checked] == [("console", True)]


def test_console_output_is_compared_line_by_line_without_the_seconds():
    assert _shown("metric    value    seconds\nisoscore  0.5   1.234\nNote: x  y\n") == \
        ["metric value", "isoscore 0.5", "Note: x y"]
    block = Block(REPO / "p.md", 1, "console", "$ isotropy measure nothing.npy\nError: something else\n", False, True)
    with pytest.raises(AssertionError, match="the docs show"):
        check_console(block)


def test_checked_print_fails_on_a_wrong_value():
    code = instrument("print(f'{2 / 3:.3f}')  # -> 0.667\n")
    exec(compile(code, "ok", "exec"), {"__doc_print__": _doc_print})
    wrong = instrument("print(f'{2 / 3:.3f}')  # -> 0.666\n")
    with pytest.raises(AssertionError, match="0.666"):
        exec(compile(wrong, "wrong", "exec"), {"__doc_print__": _doc_print})


def test_every_page_with_code_is_collected():
    names = {_page_id(p) for p in PYTHON_PAGES}
    assert "README.md" in names
    assert "docs/getting-started.md" in names


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_page_id)
def test_python_snippets_run(page, tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__", "__doc_print__": _doc_print}
    for block in extract_blocks(page.read_text(), page):
        if block.checked and block.language == "console":
            check_console(block)
            continue
        if block.language not in ("python", "py") or block.skipped:
            continue
        # padded so that a traceback names the page and its line number
        source = "\n" * block.line + instrument(block.code)
        exec(compile(source, _page_id(page), "exec"), namespace)
