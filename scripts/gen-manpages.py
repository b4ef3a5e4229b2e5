#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the man pages of the weft command, weft(1) and weft-CMD(1) for
every command `weft --help` lists, from the help texts themselves: run at
build time (CMakeLists.txt, target `manpages`) on the freshly built
command, so that the pages say what `--help` says.

    gen-manpages.py WEFT_BINARY OUT_DIR

The help texts follow a few rules (CONTRIBUTING.md, "Help texts"), which
are all this reads:
  - the first paragraph is the usage: "usage: weft ..." and continuation
    lines indented under it (SYNOPSIS);
  - a line at column 0 that ends with ':' and nothing after it heads a
    section ("options:", "example:"); a paragraph that starts with
    "exit status:" is the EXIT STATUS section;
  - in a section, a line indented by 1 to 4 spaces that starts with '-'
    is an option entry: its tag, two spaces or more, its text; lines
    indented more continue the text;
  - other lines at column 0 are prose (filled); other indented lines are
    kept as they are (examples, lists, layouts).
The NAME lines are the commands' one-line summaries of `weft --help`.
(help2man was tried: it wants "Usage:" and GNU's headings, and turns our
indented layouts into option entries; see docs/cli.md.)
"""

import datetime
import os
import re
import subprocess
import sys

HEADING = re.compile(r"^([a-z][a-z ]*):$")
OPTION_ENTRY = re.compile(r"^ {1,4}-")


def run_help(weft, args):
    """The standard output of `weft ARGS --help`."""
    return subprocess.run([weft, *args, "--help"], check=True, capture_output=True,
                          text=True).stdout


def esc(text):
    """Text for roff: backslashes and minus signs escaped, and a line
    that would start with a control character protected."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def tag_roff(tag):
    """An option tag, "-o, --output FILE": names bold, values italic."""
    out = []
    for part in re.split(r"(,? )", tag):
        if part in (", ", " ", ""):
            out.append(part.replace(" ", "\\ ") if part == " " else part)
        elif part.startswith("-"):
            out.append("\\fB" + esc(part) + "\\fR")
        else:
            out.append("\\fI" + esc(part) + "\\fR")
    return "".join(out)


def paragraphs(text):
    """The help text as lists of lines separated by blank lines."""
    paras, cur = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)
    return paras


def split_sections(text):
    """(usage lines, [(section title or None, [paragraph lines...])])."""
    paras = paragraphs(text)
    usage = paras.pop(0) if paras and paras[0][0].startswith("usage:") else []
    sections = [(None, [])]
    for para in paras:
        m = HEADING.match(para[0])
        if m:
            sections.append((m.group(1).upper(), [para[1:]] if para[1:] else []))
        elif para[0].startswith("exit status:"):
            first = para[0][len("exit status:"):].strip()
            sections.append(("EXIT STATUS", [[first] + para[1:]]))
        else:
            sections[-1][1].append(para)
    return usage, [s for s in sections if s[0] is not None or s[1]]


def block_roff(lines):
    """One paragraph: option entries (.TP), prose (filled) and indented
    lines kept as they are (.nf), in the order they come."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if OPTION_ENTRY.match(line):
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            text = parts[1:]
            indent = len(line) - len(line.lstrip())
            i += 1
            while i < len(lines) and (len(lines[i]) - len(lines[i].lstrip()) > indent
                                      and not OPTION_ENTRY.match(lines[i])):
                text.append(lines[i].strip())
                i += 1
            out += [".TP", tag_roff(parts[0])] + [esc(t) for t in text]
        elif not line[0].isspace():
            out.append(".PP")
            while i < len(lines) and lines[i] and not lines[i][0].isspace():
                out.append(esc(lines[i]))
                i += 1
        else:
            out += [".PP", ".RS 4", ".nf"]
            while i < len(lines) and lines[i][0].isspace() and not OPTION_ENTRY.match(lines[i]):
                out.append(esc(lines[i][2:] if lines[i].startswith("  ") else lines[i].lstrip()))
                i += 1
            out += [".fi", ".RE"]
    return out


def commands_roff(paras):
    """weft(1)'s COMMANDS: each command with its summary and its page."""
    out = []
    for para in paras:
        for line in para:
            m = re.match(r"^  (\S+)\s{2,}(.*)$", line)
            if m:
                out += [".TP", "\\fB" + esc(m.group(1)) + "\\fR",
                        esc(m.group(2)) + " (\\fBweft\\-" + esc(m.group(1)) + "\\fR(1))"]
            else:
                out += block_roff([line])
    return out


def page(name, summary, help_text, version, date, see_also):
    """The roff source of one page."""
    usage, sections = split_sections(help_text)
    out = ['.\\" Generated by scripts/gen-manpages.py from `%s --help`: do not edit.'
           % name.replace("-", " "),
           '.TH "%s" "1" "%s" "weft %s" "User Commands"' % (esc(name.upper()), date, version),
           ".nh", ".ad l",
           ".SH NAME", esc(name) + " \\- " + esc(summary), ".SH SYNOPSIS", ".nf"]
    for line in usage:
        out.append(esc(re.sub(r"^(usage:)?\s*", "", line)))
    out.append(".fi")
    for title, paras in sections:
        out.append(".SH " + (title or "DESCRIPTION"))
        for para in paras:
            out += commands_roff([para]) if title == "COMMANDS" else block_roff(para)
    out.append(".SH SEE ALSO")
    out.append(",\n".join(".BR %s (1)" % esc(p) for p in see_also))
    return "\n".join(out) + "\n"


def command_list(main_help):
    """[(command, summary)] from the "commands:" section of `weft --help`."""
    found, inside = [], False
    for line in main_help.split("\n"):
        if HEADING.match(line):
            inside = line == "commands:"
        elif inside:
            m = re.match(r"^  (\S+)\s{2,}(.*)$", line)
            if m:
                found.append((m.group(1), m.group(2)))
    return found


def build_date():
    """SOURCE_DATE_EPOCH's day when set (reproducible builds), else today's."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
            if epoch else datetime.datetime.now(datetime.timezone.utc))
    return when.strftime("%Y-%m-%d")


def main():
    weft, out_dir = sys.argv[1], sys.argv[2]
    version = subprocess.run([weft, "--version"], check=True, capture_output=True,
                             text=True).stdout.split()[-1]
    main_help = run_help(weft, [])
    commands = command_list(main_help)
    if not commands:
        sys.exit("gen-manpages.py: no commands in 'weft --help'")
    date = build_date()
    pages = {"weft": page("weft", description_summary(main_help), main_help, version, date,
                          ["weft-" + c for c, _ in commands])}
    for c, summary in commands:
        others = ["weft"] + ["weft-" + o for o, _ in commands if o != c]
        pages["weft-" + c] = page("weft-" + c, summary, run_help(weft, [c]), version, date,
                                  others)
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".1") and old[:-2] not in pages:
            os.remove(os.path.join(out_dir, old))
    for name, text in pages.items():
        path = os.path.join(out_dir, name + ".1")
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def description_summary(main_help):
    """weft(1)'s NAME: the first sentence of `weft --help`'s description,
    up to its colon or period, starting in lower case."""
    _, sections = split_sections(main_help)
    text = " ".join(sections[0][1][0]) if sections and sections[0][0] is None else "weft"
    text = re.split(r"[:.]", text)[0]
    return text[0].lower() + text[1:]


if __name__ == "__main__":
    main()
