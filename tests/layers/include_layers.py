#!/usr/bin/env python3
"""The dependency rule of docs/DESIGN.md ("Rooms and what each may include"), checked.

Reads every C++ source file (.h .cc .cu .cuh .hpp .cpp) of the checkout, finds the room it
lives in (the longest prefix in ROOMS) and the room or service-only library each
`#include` names, and reports every include its room may not use, as `file:line: why`.
A source file outside every room is reported too, so a new folder has to be placed in
the rule before it builds.

  python3 tests/layers/include_layers.py [--root DIR]    exit 0: clean, 1: violations
"""

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

SOURCE_EXTENSIONS = (".h", ".cc", ".cu", ".cuh", ".hpp", ".cpp")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*(([<"])([^>"]+)[>"])')

# Libraries only some rooms may use: the engine-only build (engine/, metrics/ and the
# tasks library, on the GPU machine) has none of them but CUDA and libcrypto (SHA-256 in
# engine/util), and a CPU build has no CUDA. Libraries not named here (Abseil, RE2,
# nlohmann-json, zlib, libpng, SentencePiece, the C++ and POSIX headers) are free to every
# room that links them.
LIBRARIES = {
    "grpc": re.compile(r"^grpc(pp)?/"),
    "protobuf": re.compile(r"^google/protobuf/"),
    "cuda": re.compile(r"^(cuda|cublas)\w*\.h$"),
    "sqlite": re.compile(r"^sqlite3\.h$"),
    "libpq": re.compile(r"^(libpq-fe\.h|postgresql/)"),
    "httplib": re.compile(r"^httplib\.h$"),
    "openssl": re.compile(r"^openssl/"),
    "cairo": re.compile(r"^cairo"),
    "gtest": re.compile(r"^g(test|mock)/"),
}


@dataclass(frozen=True)
class Room:
    may_include: frozenset = field(default_factory=frozenset)  # other rooms
    libraries: frozenset = field(default_factory=frozenset)  # names in LIBRARIES


def _room(may_include=(), libraries=()):
    return Room(frozenset(may_include), frozenset(libraries))


# The engine's libraries, bottom up; engine/tools holds its programs.
ENGINE = (
    "engine/util",
    "engine/loader",
    "engine/tokenizer",
    "engine/cpu",
    "engine/cuda",
    "engine/model",
    "engine/runtime",
    "engine/lm_eval",
    "engine/cli",
)
# The task libraries (what hgeval_tasks links), bottom up.
TASKS = ("tasks/report", "tasks/api", "tasks/models", "tasks/harness", "tasks")
EVERYTHING = None  # bench/ and tests/: any room, any library
# Rooms of single files (their paths without the extension), where a folder holds two:
# client/ holds the client library, which links no engine, beside the `hgeval` program.
CLIENT_LIBRARY = "hgeval_client"
FILE_ROOMS = {"client/client": CLIENT_LIBRARY, "client/results_table": CLIENT_LIBRARY}

# What every server room may include below the server.
SERVER_BASE = (*ENGINE, "metrics", *TASKS, "proto")
SERVER_ROOMS = (
    "server/core",
    "server/store",
    "server/exec",
    "server/jobs",
    "server/rpc",
    "server/http",
)

# Room (path prefix; "proto" is the generated `hgeval/v1/*.pb.h`) -> what it may include
# besides itself. Nothing may include a room that is not listed here for it, so the
# programs' folders (*/tools), bench/ and tests/ are included by no library.
ROOMS = {
    # engine/util/sha256 wraps libcrypto's EVP API: the one SHA-256 of the tree.
    "engine/util": _room(libraries=["openssl"]),
    "engine/loader": _room(["engine/util"]),
    "engine/tokenizer": _room(["engine/util"]),
    # The backends implement engine/model's Model interface ...
    "engine/cpu": _room(["engine/util", "engine/loader", "engine/model"]),
    "engine/cuda": _room(["engine/util", "engine/loader", "engine/model"], ["cuda"]),
    # ... and engine/model's factory (load_model) picks one of them.
    "engine/model": _room(
        ["engine/util", "engine/loader", "engine/tokenizer", "engine/cpu", "engine/cuda"]
    ),
    "engine/runtime": _room(["engine/util", "engine/tokenizer", "engine/model"]),
    # lm-eval's request rules, below every program so that each (engine/tools too) uses them.
    "engine/lm_eval": _room(["engine/util", "engine/tokenizer", "engine/model", "engine/runtime"]),
    # The command-line convention and the model-loading flags of every program.
    "engine/cli": _room(["engine/util", "engine/loader", "engine/tokenizer", "engine/model"]),
    "engine/tools": _room(ENGINE),
    # Python's whitespace and the lenient decoder of its text rules live in the one UTF-8
    # module, engine/tokenizer/utf8.h.
    # metrics/aggregation's bootstrap runs on the process's worker pool (engine/util).
    "metrics": _room(["engine/util", "engine/tokenizer"]),
    # tasks/ as lm-evaluation-harness shapes it: the task contract and registry (api), the
    # engine adapters (models), the evaluator and its reports (harness), the task families
    # (the rest of tasks/) and the programs' shared flags (programs).
    # The results table (hgeval_report): nothing of the tree, so the C++ client prints it
    # without the engine.
    "tasks/report": _room(),
    "tasks/api": _room([*ENGINE, "metrics"]),
    "tasks/models": _room([*ENGINE, "metrics", "tasks/api"]),
    "tasks/harness": _room([*ENGINE, "metrics", "tasks/api", "tasks/report"]),
    "tasks": _room([*ENGINE, "metrics", "tasks/api", "tasks/models", "tasks/harness", "tasks/report"]),
    "tasks/programs": _room([*ENGINE, "metrics", *TASKS]),
    "tasks/plot": _room([], ["cairo"]),
    "tasks/niah/heatmap": _room(["metrics", "tasks/plot"], ["cairo"]),
    "tasks/niah/tools": _room([*ENGINE, "metrics", *TASKS, "tasks/programs", "tasks/niah/heatmap"]),
    "tasks/tools": _room([*ENGINE, "metrics", *TASKS, "tasks/programs"]),
    "proto": _room(),
    # server/ in rooms by job, bottom up: core (what every room shares) -> store (result
    # stores) -> exec (registry, schedulers, executor) -> jobs -> rpc (gRPC handlers);
    # http (the HTTP/OpenAI gateway and the web UI, clients of the service over its
    # channel) stands on core alone; server_main.cc wires them together.
    "server/core": _room(SERVER_BASE, ["grpc", "protobuf", "openssl"]),
    "server/store": _room([*SERVER_BASE, "server/core"], ["sqlite", "libpq"]),
    "server/exec": _room([*SERVER_BASE, "server/core", "server/store"]),
    "server/jobs": _room(
        [*SERVER_BASE, "server/core", "server/store", "server/exec"], ["grpc", "protobuf"]
    ),
    "server/rpc": _room(
        [*SERVER_BASE, "server/core", "server/store", "server/exec", "server/jobs"],
        ["grpc", "protobuf"],
    ),
    "server/http": _room([*SERVER_BASE, "server/core"], ["grpc", "protobuf"]),
    "server": _room([*SERVER_BASE, "tasks/programs", *SERVER_ROOMS], ["grpc", "protobuf"]),
    # The client library (hgeval_client: client/client.*, client/results_table.*) needs no
    # engine: the RPC stubs and the results table only.
    CLIENT_LIBRARY: _room(["proto", "tasks/report"], ["grpc", "protobuf"]),
    "client": _room(
        [
            *ENGINE,
            "metrics",
            *TASKS,
            "tasks/programs",
            "tasks/niah/heatmap",
            "tasks/plot",
            "proto",
            CLIENT_LIBRARY,
        ],
        ["grpc", "protobuf"],
    ),
    "bench": EVERYTHING,
    "tests": EVERYTHING,
}

# Where an include path's room is when it does not start with the room's own prefix.
INCLUDE_PREFIX_ROOMS = {"hgeval/": "proto"}


def room_of_path(path):
    """The room of a repository-relative path (a file, or an included header); None if none."""
    for prefix, room in INCLUDE_PREFIX_ROOMS.items():
        if path.startswith(prefix):
            return room
    stem = os.path.splitext(path)[0]
    if stem in FILE_ROOMS:
        return FILE_ROOMS[stem]
    best = None
    for room in ROOMS:
        inside = path == room or path.startswith(room + "/")
        if inside and (best is None or len(room) > len(best)):
            best = room
    return best


def library_of_include(path):
    for name, pattern in LIBRARIES.items():
        if pattern.search(path):
            return name
    return None


def _allowed_rooms(room):
    allowed = set(ROOMS[room].may_include)
    names = []
    if allowed >= set(ENGINE):
        allowed -= set(ENGINE)
        names.append("engine/ (but engine/tools)")
    return ", ".join(names + sorted(allowed)) or "nothing"


def check_file(root, rel_path):
    """Violations of one file, as 'path:line: message' strings."""
    room = room_of_path(rel_path)
    if room is None:
        return [f"{rel_path}:1: in no room of tests/layers/include_layers.py's ROOMS; add one"]
    rule = ROOMS[room]
    if rule is EVERYTHING:
        return []
    violations = []
    with open(os.path.join(root, rel_path), encoding="utf-8", errors="replace") as f:
        for line_number, line in enumerate(f, start=1):
            match = INCLUDE_LINE.match(line)
            if not match:
                continue
            spelled, included = match.group(1), match.group(3)
            target = room_of_path(included)
            if target is not None:
                if target != room and target not in rule.may_include:
                    violations.append(
                        f'{rel_path}:{line_number}: {room} includes {spelled} of {target}; '
                        f"{room} may include {_allowed_rooms(room)}"
                    )
                continue
            library = library_of_include(included)
            if library is not None and library not in rule.libraries:
                allowed = ", ".join(sorted(rule.libraries)) or "none of them"
                violations.append(
                    f"{rel_path}:{line_number}: {room} includes {spelled} "
                    f"({library}); of the service-only libraries {room} may use {allowed}"
                )
    return violations


def source_files(root):
    """Repository-relative paths of every C++ source file, build trees and dot folders left out."""
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith((".", "build")))
        for name in sorted(files):
            if name.endswith(SOURCE_EXTENSIONS):
                found.append(os.path.relpath(os.path.join(directory, name), root))
    return found


def check_tree(root):
    violations = []
    for rel_path in source_files(root):
        violations.extend(check_file(root, rel_path.replace(os.sep, "/")))
    return violations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--root", default=default_root, help="the checkout (default: this one)")
    args = parser.parse_args()
    files = source_files(args.root)
    violations = check_tree(args.root)
    for violation in violations:
        print(violation)
    print(f"{len(files)} source files, {len(violations)} include(s) against the dependency rule")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
