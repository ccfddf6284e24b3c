"""The documentation holds: docs/cli.md is the ``--help`` of every command as it is now, the
README is short and its examples print what it shows, every relative link in the README and
under docs/ points to a file (and heading) that exists, and every section of
docs/semantics.md that the code cites exists."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- docs/cli.md, generated from --help ---------------------------------------------------------


def test_the_cli_reference_is_up_to_date() -> None:
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == _script().render(), (
        "docs/cli.md is out of date: run python scripts/cli_reference.py"
    )


def test_the_cli_reference_has_every_command_and_option() -> None:
    from cepcli.cli import cli

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "Usage: cepcli [OPTIONS] COMMAND" in text
    for name, command in cli.commands.items():
        assert f"## `cepcli {name}`\n" in text and f"Usage: cepcli {name} " in text
        for param in command.params:
            for flag in param.opts:
                if flag.startswith("-"):
                    assert flag in text, f"{name} {flag} is not in docs/cli.md"


def test_the_cli_reference_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    monkeypatch.setenv("COLUMNS", "40")
    narrow = script.render()
    monkeypatch.setenv("COLUMNS", "250")
    assert script.render() == narrow


def test_check_fails_in_one_line_on_a_stale_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    stale = tmp_path / "cli.md"
    stale.write_text(script.render().replace("--max-matches", "--max-hits"), encoding="utf-8")
    monkeypatch.setattr(script, "TARGET", stale)
    assert script.main(["--check"]) == 1
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "python scripts/cli_reference.py" in said
    assert script.main([]) == 0 and stale.read_text(encoding="utf-8") == script.render()
    assert script.main(["--check"]) == 0 and capsys.readouterr().out == ""


# --- the README ---------------------------------------------------------------------------------


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 260, f"README.md has {len(lines)} lines: move the detail to docs/"


def _blocks(text: str) -> list[tuple[str, str, int]]:
    """Every fenced block: (info string, body, index of the line after its closing fence)."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info, body, i = lines[i][3:].strip(), [], i + 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            found.append((info, "\n".join(body) + "\n", i + 1))
        i += 1
    return found


def _shown_outputs() -> list[tuple[str, str]]:
    """(command, output) for every ``bash`` block of the README that is followed, after one
    blank line, by a plain block: the output the README says the command prints."""
    text = README.read_text(encoding="utf-8")
    lines, blocks = text.splitlines(), _blocks(text)
    pairs = []
    for (info, body, after), (next_info, next_body, _) in zip(blocks, blocks[1:], strict=False):
        if info == "bash" and next_info == "" and lines[after] == "" and lines[after + 1] == "```":
            pairs.append((body, next_body))
    return pairs


def _shell(command: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_examples_print_what_it_shows() -> None:
    pairs = _shown_outputs()
    assert len(pairs) >= 2, "the README's examples lost their outputs"
    for command, shown in pairs:
        assert _shell(command) == shown, command


def test_the_quick_start_prints_the_table_the_readme_shows() -> None:
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "cepcli run patterns/stocks_seq.sase\n" in quick
    table = next(body for info, body, _ in _blocks(quick) if info == "" and body.startswith("┏"))
    assert _shell("cepcli run patterns/stocks_seq.sase") == table


# --- relative links ---------------------------------------------------------------------------------

_FENCED = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")


def _pages() -> list[Path]:
    return [README, ROOT / "BENCHMARKS.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _FENCED.sub("", text).splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = _slug(heading.group(1))
            anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _broken_links(page: Path, text: str) -> Iterator[str]:
    for target in _LINK.findall(_CODE.sub("", _FENCED.sub("", text))):
        if _SCHEME.match(target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            yield f"{target} (no such file)"
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text(encoding="utf-8")):
            yield f"{target} (no such heading)"


def test_every_relative_link_points_to_what_exists() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {why}"
        for page in _pages()
        for why in _broken_links(page, page.read_text(encoding="utf-8"))
    ]
    assert not broken, "\n".join(broken)


def test_the_link_check_finds_a_broken_link() -> None:
    text = "[a](docs/semantics.md) [b](docs/nowhere.md) [c](docs/semantics.md#6-what-a-match-is)"
    text += " [d](docs/semantics.md#9-nothing) `[e](not/a/link.md)` [f](https://example.org/x)"
    assert list(_broken_links(README, text)) == [
        "docs/nowhere.md (no such file)",
        "docs/semantics.md#9-nothing (no such heading)",
    ]


# --- sections of docs/semantics.md cited elsewhere ------------------------------------------------------

_CITATION = re.compile(
    r"semantics(?:\.md)?,?\s+sections?\s+(\d+(?:\.\d+)?(?:\s*(?:-|,|and)\s*\d+(?:\.\d+)?)*)", re.I
)
_SECTION_SIGN = re.compile(r"§\s*(\d+(?:\.\d+)?)")


def _cited(text: str) -> list[str]:
    """The section numbers ``text`` cites: ``semantics.md section 7``, ``semantics.md,
    sections 2-3``, ``§6``, ``section 2.7`` (item 7 of section 2)."""
    found = []
    for group in _CITATION.findall(text) + _SECTION_SIGN.findall(text):
        for first, last in re.findall(r"(\d+(?:\.\d+)?)(?:\s*-\s*(\d+))?", group):
            if last:
                found.extend(str(n) for n in range(int(first), int(last) + 1))
            else:
                found.append(first)
    return found


def _missing(cited: list[str], semantics: str) -> list[str]:
    sections = re.split(r"^## ", semantics, flags=re.M)
    bodies = {s.split(".", 1)[0]: s for s in sections[1:] if re.match(r"\d+\.", s)}
    missing = []
    for number in cited:
        section, _, item = number.partition(".")
        if section not in bodies or (item and not re.search(rf"^{item}\. ", bodies[section], re.M)):
            missing.append(number)
    return missing


def test_every_cited_section_of_the_semantics_exists() -> None:
    semantics = (DOCS / "semantics.md").read_text(encoding="utf-8")
    sources = [*(ROOT / "cepcli").rglob("*.py"), *(ROOT / "cepcli").rglob("*.lark")]
    sources += [README, ROOT / "CHANGELOG.md", *(p for p in DOCS.glob("*.md") if p.name != "semantics.md")]
    cited = {path: _cited(path.read_text(encoding="utf-8")) for path in sources}
    assert any(cited[p] for p in sources if p.suffix in (".py", ".lark")), "no citation found in cepcli/"
    wrong = [
        f"{p.relative_to(ROOT)}: section {n}"
        for p, numbers in cited.items()
        for n in _missing(numbers, semantics)
    ]
    assert not wrong, "docs/semantics.md has no such section:\n" + "\n".join(wrong)


def test_the_section_check_finds_a_missing_section() -> None:
    semantics = (DOCS / "semantics.md").read_text(encoding="utf-8")
    text = "see docs/semantics.md, sections 2-3; semantics.md section 2.7 and §6; semantics.md section 9.1"
    assert _cited(text) == ["2", "3", "2.7", "9.1", "6"]
    assert _missing(_cited(text) + ["2.99"], semantics) == ["9.1", "2.99"]
