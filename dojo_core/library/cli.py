"""``python -m dojo_core library build ...``: the command line of the library builder.

    library build --target T --out DIR [--records FILE.jsonl | --server URL]
                  [--sizes-from SIZES.json] [--kernels a,b,...] [--no-replay] [--measured-only]

T is ``local``, a runner name or label, a fingerprint, or an ISA name (x86-avx2, arm-sve,
riscv-rvv, ...: a foreign ISA is cross-compiled and checked under its emulator).  Every
library kernel (of ``--kernels``) is exported: measured records where there are some, else
the target's own ``.steps`` schedule, else the untransformed kernel; each output line says
which.  ``--measured-only`` exports measured records only (and refuses when there are none).

Records come from ``--records`` (default: the default RecordStore), or with ``--server``
from the web app (``GET /api/library/records``).  ``SIZES.json`` maps kernel names to a
size object or a list of them (``{"matmul": [{"N": 256, "M": 256, "K": 256}]}``): sizes
without a tuned entry are added as the untransformed kernel.  A target without
measurements is replayed: ``local`` here (the new records are appended to the store in
use, or the default store with ``--server``), a runner or label through benchmark jobs on
the server; ``--no-replay`` refuses instead.  Prints one line per function and the
transfers; refusals are LibraryError (the caller prints one line and exits 1).
"""
from __future__ import annotations

import json


def add_library_parser(sub, func) -> None:
    p = sub.add_parser("library", help="build the best verified kernels of a target as a C library",
                       description="build the best verified kernels of a target as a C library")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = actions.add_parser("build", help="write the library into DIR")
    b.add_argument("--target", required=True, metavar="T",
                   help="a fingerprint, a runner name, a runner label, or 'local'")
    b.add_argument("--out", required=True, metavar="DIR", help="the library directory (created)")
    src = b.add_mutually_exclusive_group()
    src.add_argument("--records", metavar="FILE.jsonl", help="a record store (default: the default one)")
    src.add_argument("--server", metavar="URL", help="take the records from a PerfDojo web app")
    b.add_argument("--sizes-from", metavar="SIZES.json", help="sizes wanted besides the tuned ones")
    b.add_argument("--kernels", metavar="a,b", help="only these kernels")
    b.add_argument("--no-replay", action="store_true",
                   help="refuse a target without measurements instead of replaying other machines' best")
    b.add_argument("--measured-only", action="store_true",
                   help="export measured records only, not the .steps schedules or untransformed "
                        "kernels of the kernels without measurements")
    b.set_defaults(func=func)


def read_sizes(path: str) -> dict:
    """{kernel: [sizes, ...]} from a SIZES.json file, or LibraryError."""
    from .select import LibraryError
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise LibraryError(f"--sizes-from {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise LibraryError(f"--sizes-from {path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LibraryError(f"--sizes-from {path}: expected an object mapping kernels to sizes")
    out = {}
    for kernel, value in data.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(s, dict) and all(isinstance(v, int) and not isinstance(v, bool)
                                               for v in s.values()) for s in items):
            raise LibraryError(f"--sizes-from {path}: {kernel}: expected size objects like {{\"N\": 64}}")
        out[kernel] = items
    return out


def library_build(args, write, eprint) -> int:
    from ..records import RecordStore
    from .build import build_library, isa_of
    from .select import LibraryError, candidates, resolve_target

    if args.records:
        import os
        if not os.path.isfile(args.records):
            raise LibraryError(f"--records {args.records}: no such file")
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] if args.kernels else None
    sizes = read_sizes(args.sizes_from) if args.sizes_from else None
    runners, transfers = (), None
    if args.server:
        from .client import fetch_records, replay_on_runner
        records, runners = fetch_records(args.server)
        store = RecordStore()
        target = args.target.strip()
        if isa_of(target) is None:
            fingerprints = resolve_target(target, records, runners)
            found = {k for k in candidates(records, fingerprints) if kernels is None or k[0] in kernels}
            if not found and not args.no_replay:
                transfers = replay_on_runner(args.server, target, records, fingerprints, log=eprint,
                                             kernels=set(kernels) if kernels else None)
                records, runners = fetch_records(args.server)
    else:
        store = RecordStore(args.records)
        records = list(store)
    manifest = build_library(args.out, args.target, records, runners=runners, sizes_wanted=sizes,
                             kernels=set(kernels) if kernels else None,
                             replay=not args.no_replay, store=store, log=eprint, transfers=transfers,
                             complete=not args.measured_only)
    from .replay import describe_transfer
    for t in manifest.get("transfers", []):
        eprint(describe_transfer(t))
    for gone in manifest.get("excluded", []):
        eprint(f"left out {gone['kernel']} {gone['sizes']}: {gone['reason']}")
    for fn in manifest["functions"]:
        if fn.get("source") == "steps":
            kind = f"schedule {fn['schedule']} ({fn['steps']} steps, not measured)"
        elif fn["measured"]:
            kind = f"tuned ({fn['steps']} steps)" if fn["tuned"] else "untransformed (measured)"
        else:
            kind = "untransformed (fallback)"
        speed = f", {fn['speedup']:.2f}x" if fn.get("speedup") else ""
        write(f"{fn['name']}: {kind}{speed}")
    emulator = (manifest.get("cross") or {}).get("emulator")
    under = f", the tests under {emulator.split()[0]}" if emulator else ""
    write(f"wrote {args.out}: {len(manifest['functions'])} functions for target "
          f"{manifest['target']} (make -C {args.out} && make -C {args.out} check{under})")
    if manifest.get("transfers") is not None and not manifest["transfers"]:
        eprint("no transfers: no other machine has measurements of these kernels")
    return 0
