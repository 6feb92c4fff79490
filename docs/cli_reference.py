"""Write the CLI reference (docs/cli.md) from the parsers themselves: every verb's ``--help``, as the CLI prints it.

    python docs/cli_reference.py           # rewrite docs/cli.md
    python docs/cli_reference.py --stdout  # print it instead

The suite checks that every verb and every option the parsers define is in docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

WIDTH = 100


def verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's sub-commands by name, in the order they were added."""
    for action in parser._actions:  # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices.items())
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    formatter = parser.formatter_class

    def fixed_width() -> argparse.HelpFormatter:
        return formatter(prog=parser.prog, width=WIDTH)

    parser._get_formatter = fixed_width  # type: ignore[method-assign]  # a width that no terminal changes
    return parser.format_help().rstrip()


def reference() -> str:
    """The whole page: the top-level help, then one section per verb."""
    from splitscope.engine.cli import build_parser

    top = build_parser()
    top.prog = "splitscope"
    out = [
        "# CLI reference",
        "",
        "Generated from the parsers by `python docs/cli_reference.py`; each section is what `splitscope VERB --help`",
        "prints. The task pages of the [user guide](guide/open.md) say what the figures mean; every verb exits 0 on",
        "success, 2 on bad input with one line on stderr that says what to do, and 130 when interrupted.",
        "",
        "```text",
        _help(top),
        "```",
    ]
    for name, parser in verbs(top).items():
        out += ["", f"## {name}", "", "```text", _help(parser), "```"]
        for sub_name, sub in verbs(parser).items():
            out += ["", f"### {name} {sub_name}", "", "```text", _help(sub), "```"]
    return "\n".join(out) + "\n"


def main() -> None:
    text = reference()
    if "--stdout" in sys.argv[1:]:
        sys.stdout.write(text)
        return
    Path(__file__).with_name("cli.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
