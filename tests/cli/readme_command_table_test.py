#!/usr/bin/env python3
"""The README's table of commands against the programs' own --help, so that the two cannot drift.

For every row of the table under "## Command-line tools" (program, command, what, flags):
  - every `--flag` the row names exists in that program's --help (a `--noflag` names the
    boolean `--flag`);
  - every command the row names appears in the program's --help (its usage text);
  - every flag a program's --help lists is named somewhere in its rows, for every program
    but hgeval-server (its row names the main flags; --help lists its limits as well).

  python3 tests/cli/readme_command_table_test.py --readme README.md --build build
"""

import argparse
import os
import re
import subprocess
import sys
import unittest

PROGRAMS = {
    "hgeval-server": "server/hgeval-server",
    "hgeval": "client/hgeval",
    "hgeval-eval": "tasks/tools/hgeval-eval",
    "hgeval-niah": "tasks/niah/tools/hgeval-niah",
    "hgeval-engine": "engine/tools/hgeval-engine",
}
# Programs whose row lists only the main flags.
MAIN_FLAGS_ONLY = {"hgeval-server"}

FLAG_IN_TEXT = re.compile(r"--([a-z][a-z0-9_]*)")
FLAG_IN_HELP = re.compile(r"^  --([a-z][a-z0-9_]*)=", re.MULTILINE)


def table_rows(readme_text):
    """(program, command cell, flags cell) of each row of the command table."""
    section = readme_text.split("## Command-line tools", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        # A `\|` inside a cell is text, not a column.
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 4:
            raise ValueError(f"a command-table row without 4 cells: {line}")
        rows.append((cells[0].strip("`"), cells[1], cells[3]))
    return rows


def help_text(build, program):
    result = subprocess.run(
        [os.path.join(build, PROGRAMS[program]), "--help"],
        capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{program} --help exited {result.returncode}: {result.stderr}")
    return result.stdout


def flag_name(name, known):
    """`noflag` names the boolean `flag`."""
    if name not in known and name.startswith("no") and name[2:] in known:
        return name[2:]
    return name


def check(readme_text, helps):
    """Problems, as sentences; empty when the table and the programs agree."""
    problems = []
    named = {program: set() for program in helps}
    for program, commands, flags in table_rows(readme_text):
        if program not in helps:
            problems.append(f"the table names a program {program!r} that is not built here")
            continue
        known = set(FLAG_IN_HELP.findall(helps[program]))
        for name in FLAG_IN_TEXT.findall(flags):
            if name == "help":  # every program's, printed by engine/cli
                continue
            name = flag_name(name, known)
            named[program].add(name)
            if name not in known:
                problems.append(f"{program}: the README names --{name}, which --help lacks")
        for command in re.findall(r"`([a-z]+)", commands):
            if not re.search(rf"\b{command}\b", helps[program]):
                problems.append(f"{program}: the README names command {command!r}; --help does not")
    for program, text in helps.items():
        if program in MAIN_FLAGS_ONLY:
            continue
        for name in sorted(set(FLAG_IN_HELP.findall(text)) - named[program]):
            problems.append(f"{program}: --help has --{name}, which the README's table does not name")
    return problems


class ReadmeCommandTableTest(unittest.TestCase):
    readme = None
    build = None

    def test_table_matches_every_programs_help(self):
        with open(self.readme, encoding="utf-8") as f:
            text = f.read()
        helps = {program: help_text(self.build, program) for program in PROGRAMS}
        problems = check(text, helps)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_a_drifted_table_is_caught(self):
        helps = {"hgeval-eval": "Flags:\n  --model=\n      m\n  --tasks=\n      t\n"}
        table = ("## Command-line tools\n| program | command | what | flags |\n|---|---|---|---|\n"
                 "| `hgeval-eval` | | run | `--model`, `--limit` |\n")
        self.assertEqual(check(table, helps), [
            "hgeval-eval: the README names --limit, which --help lacks",
            "hgeval-eval: --help has --tasks, which the README's table does not name",
        ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--build", required=True)
    args, rest = parser.parse_known_args()
    ReadmeCommandTableTest.readme = args.readme
    ReadmeCommandTableTest.build = args.build
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
