"""The docs a user navigates: README short with its two commands, every link landing on a file or heading that is
there, the CLI reference covering every verb and option the parsers define, and no issue numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"#+ (.*)", line):
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_readme_is_short_and_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count("\n") < 250
    first_block = text.split("```bash", 1)[1].split("```", 1)[0]
    assert "bash packaging/run.sh" in first_block and "bash .ci/run" in first_block


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_lands(page: Path):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # another site: not checked here
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.exists(), f"{page.name}: {target} is not there"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: no heading #{anchor} in {dest.name}"


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_carry_no_issue_numbers(page: Path):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"\S*issue\d+\S*", "", text)  # file names of old GPU runs (bench/gpu_issue20.sh) are names
    assert not re.search(r"(?i)\bissues? ?#?\d", text)


def test_the_cli_reference_covers_every_verb_and_option():
    from splitscope.engine.cli import build_parser

    spec = (ROOT / "docs" / "cli_reference.py").read_text(encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "cli_reference"}
    exec(compile(spec, "cli_reference.py", "exec"), namespace)
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    verbs = namespace["verbs"](build_parser())  # type: ignore[operator]
    assert len(verbs) >= 9
    for name, parser in verbs.items():
        assert f"\n## {name}\n" in page, f"docs/cli.md has no section for {name}: python docs/cli_reference.py"
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page, f"docs/cli.md lacks {name} {flag}: python docs/cli_reference.py"
