# SPDX-License-Identifier: MIT
"""The help texts are the source of the command's documentation: every
`weft CMD --help` lists every option the command accepts (its parser's
table, from `weft __complete options CMD`), and docs/cli.md documents
the options the help lists, no more, no fewer.

docs/cli.md's sections: the text before the first `## ` heading is
`weft`'s own (the options of every command, and `-V`), `## weft CMD`
is CMD's, up to the next `## ` heading. An option is documented in a
section when a row of one of its option tables (a table whose header
starts with `| option |`) names it in its first column; the synopsis
(the first code block of the section) may only name options the
command accepts."""

import re

import pytest

from weftlib import REPO_DIR, run_weft

CLI_MD = REPO_DIR / "docs" / "cli.md"
LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
COMMON_HEADING = "options of every command:"


def commands():
    """The commands of `weft __complete commands` (main.c's table)."""
    out = run_weft("__complete", "commands", expect=0).stdout
    return [line.split("\t")[0] for line in out.splitlines()]


def help_sections(args):
    """The options of `weft ARGS --help` by heading: {"options:": {...},
    "options of every command:": {...}}. An option is a long option at
    the start of an entry (a line that starts with two spaces and '-')."""
    out = run_weft(*args, "--help", expect=0).stdout
    sections, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = sections.setdefault(line, set())
        elif current is not None and re.match(r"  -", line):
            tag = re.split(r"\s{2,}", line.strip())[0]
            current.update(LONG_OPTION.findall(tag))
    return sections


def help_options(args):
    """Every long option `weft ARGS --help` lists."""
    return set().union(*help_sections(args).values())


def cli_md_sections():
    """{"weft": text before the first "## ", "dump": "## weft dump" ...}."""
    text = CLI_MD.read_text()
    parts = re.split(r"^## ", text, flags=re.M)
    sections = {"weft": parts[0]}
    for part in parts[1:]:
        heading = part.splitlines()[0].strip()
        m = re.fullmatch(r"weft (\w+)", heading)
        if m:
            sections[m.group(1)] = part
    return sections


def table_options(section):
    """Long options in the first column of the section's option tables."""
    found, in_table = set(), False
    for line in section.splitlines():
        if line.startswith("| option |"):
            in_table = True
        elif in_table and line.startswith("|"):
            first = line.split("|")[1]
            found.update(LONG_OPTION.findall(first))
        else:
            in_table = False
    return found


def synopsis_options(section):
    """Long options of the section's first code block (its synopsis)."""
    m = re.search(r"^```\n(.*?)^```", section, flags=re.M | re.S)
    return set(LONG_OPTION.findall(m.group(1))) if m else set()


SECTIONS = cli_md_sections()
COMMANDS = commands()


def test_every_command_has_a_section():
    missing = [c for c in COMMANDS if c not in SECTIONS]
    assert not missing, f"docs/cli.md has no '## weft CMD' section for: {', '.join(missing)}"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_every_accepted_option(command):
    """The parser's table (what the command accepts) and its help agree."""
    out = run_weft("__complete", "options", command, expect=0).stdout
    accepted = {o for o in out.split() if o.startswith("--")}
    listed = help_options([command])
    assert not accepted - listed, (
        f"'weft {command} --help' does not list the option(s) it accepts: "
        f"{', '.join(sorted(accepted - listed))}")
    assert not listed - accepted, (
        f"'weft {command} --help' lists option(s) it does not accept: "
        f"{', '.join(sorted(listed - accepted))}")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_options_are_documented(command):
    """Each option of CMD's own list has a row in '## weft CMD'; each
    option of every command has one in the top section."""
    sections = help_sections([command])
    documented = table_options(SECTIONS.get(command, ""))
    common_documented = table_options(SECTIONS["weft"])
    own = sections.get("options:", set())
    common = sections.get(COMMON_HEADING, set())
    missing = sorted(own - documented)
    assert not missing, (
        f"docs/cli.md, section '## weft {command}': no row of its option table "
        f"documents {', '.join(missing)} (listed by 'weft {command} --help')")
    missing = sorted(common - common_documented)
    assert not missing, (
        f"docs/cli.md, the options of every command (the table before the first "
        f"'## ' heading): no row documents {', '.join(missing)} "
        f"(listed by 'weft {command} --help' under '{COMMON_HEADING}')")


@pytest.mark.parametrize("command", COMMANDS)
def test_documented_options_exist(command):
    """'## weft CMD' names no option (tables, synopsis) CMD does not accept."""
    section = SECTIONS.get(command, "")
    listed = help_options([command])
    for where, names in (("option table", table_options(section)),
                         ("synopsis", synopsis_options(section))):
        extra = sorted(names - listed)
        assert not extra, (
            f"docs/cli.md, section '## weft {command}': its {where} names "
            f"{', '.join(extra)}, which 'weft {command} --help' does not list")


def test_weft_options_documented():
    """The top section's option tables are exactly `weft --help`'s options."""
    listed = help_options([])
    documented = table_options(SECTIONS["weft"])
    assert not listed - documented, (
        f"docs/cli.md, the section before the first '## ' heading: no row of its "
        f"option tables documents {', '.join(sorted(listed - documented))} "
        f"(listed by 'weft --help')")
    assert not documented - listed, (
        f"docs/cli.md, the section before the first '## ' heading documents "
        f"{', '.join(sorted(documented - listed))}, which 'weft --help' does not list")


def test_every_command_help_has_the_common_options():
    """The common options' help is one text: the same in every command's
    --help as in `weft --help`."""
    def common_block(args):
        out = run_weft(*args, "--help", expect=0).stdout
        start = out.index(COMMON_HEADING)
        end = out.find("\n\n", start)
        return out[start:end]
    reference = common_block([])
    for command in COMMANDS:
        block = common_block([command])
        # A command may add notes under an option: every line of the
        # reference is there, in the same order.
        lines = iter(block.splitlines())
        for line in reference.splitlines():
            assert any(line == other for other in lines), (
                f"'weft {command} --help': its '{COMMON_HEADING}' lacks {line!r}")
