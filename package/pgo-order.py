#!/usr/bin/env python3
"""Writes the order in which the release build's linker lays out functions
(package/pgo.sh), from the counting build's profiles:

    pgo-order.py LLVM_PROFDATA OUT STARTUP_DIR FIRST_DIR MERGED_PROFDATA

STARTUP_DIR holds the profiles of a server that started and stopped
(`server.profraw`, and its ready worker's), FIRST_DIR those of a server
that answered one request, MERGED_PROFDATA the whole training's counts.

The kernel maps code 64 KiB around each page a process first runs, so what
an idle server and worker keep resident is set by how scattered the code
they ran is. The order keeps each process's code together, the server's
first and the worker's last, with what both run between them:

    server only (request, then start) | both | worker only (start, then
    request) | other instances of the generic functions in these | the
    rest of the training, most run first

Functions that never ran in training follow in the linker's own order.
Profile names are the symbols the release build links (a local function's
name is prefixed with its file and `;`).
"""

import re
import subprocess
import sys
from pathlib import Path


def unhashed(name):
    """A legacy-mangled symbol without its instance hash (`17h<16 hex>E`)."""
    return re.sub(r"17h[0-9a-f]{16}E$", "", name)


def executed(profdata, profile):
    """The functions a profile counted running, with their highest count."""
    listing = subprocess.run(
        [profdata, "show", "--all-functions", "--counts", str(profile)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    counts = {}
    name = None
    for line in listing.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            name = line.strip()[:-1].split(";", 1)[-1]
        elif name and line.strip().startswith("Block counts:"):
            values = line.split("[", 1)[1].rstrip("]").split(",")
            top = max((int(v) for v in values if v.strip()), default=0)
            if top > 0:
                counts[name] = max(counts.get(name, 0), top)
    return counts


def processes(profdata, directory):
    """What the server ran, and what its workers ran, in one phase."""
    directory = Path(directory)
    server = set(executed(profdata, directory / "server.profraw"))
    workers = set()
    for profile in sorted(directory.glob("*.profraw")):
        if profile.name != "server.profraw":
            workers |= set(executed(profdata, profile))
    return server, workers


def main(profdata, out, startup_dir, first_dir, merged):
    start_server, start_worker = processes(profdata, startup_dir)
    first_server, first_worker = processes(profdata, first_dir)
    for directory, workers in ((startup_dir, start_worker), (first_dir, first_worker)):
        if not workers:
            sys.exit("pgo-order.py: no worker profile in " + directory)
    server = start_server | first_server
    worker = start_worker | first_worker
    both = server & worker
    groups = [
        (server - both) - start_server,
        (server - both) & start_server,
        both,
        (worker - both) & start_worker,
        (worker - both) - start_worker,
    ]
    order = [name for group in groups for name in sorted(group)]
    placed = set(order)
    counts = executed(profdata, merged)
    rest = sorted((n for n in counts if n not in placed), key=lambda n: (-counts[n], n))
    # Other instances of the generic functions above: the release build
    # keeps one of several identical instances (LLVM merges them), maybe one
    # the first runs did not name.
    generic = {unhashed(name) for name in placed}
    order += [n for n in rest if unhashed(n) in generic]
    order += [n for n in rest if unhashed(n) not in generic]
    Path(out).write_text("".join(name + "\n" for name in order))
    print(
        f"function order: {len(server - both)} server, {len(both)} both, "
        f"{len(worker - both)} worker, {len(order) - len(placed)} more from the training"
    )


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
