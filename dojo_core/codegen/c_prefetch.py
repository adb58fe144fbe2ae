"""The C of a ``prefetch X[lo..hi, ...]`` statement: software cache-line prefetches.

For every row of the box (each combination of the indices of all dimensions but the last)
the generated code prefetches every cache line that the last dimension's range covers, with
``__builtin_prefetch(address, RW, 3)`` (locality 3: keep it in every cache level). RW is 1
(prefetch for a write, the line arrives exclusive) when the body the statement sits in (the
enclosing loop's body) writes X, else 0. The line size is the target's
(``Target.cache_line_bytes``).

    prefetch C[6*i20 + 6..6*i20 + 12, 16*j20..16*j20 + 16]

    /* prefetch C[6*i20 + 6..6*i20 + 12, 16*j20..16*j20 + 16] */
    {
      #pragma GCC unroll 6
      for (int64_t dojo_pf1 = 6*i20 + 6; dojo_pf1 < 6*i20 + 12; ++dojo_pf1) {
        const int64_t dojo_pr2 = dojo_clamp(dojo_pf1, 1024);
        if (16*j20 < 16*j20 + 16) {
          const int64_t dojo_pb3 = dojo_pr2 * 1024 + dojo_clamp(16*j20, 1024), dojo_pe4 = ...;
          for (int64_t dojo_po5 = dojo_pb3; dojo_po5 < dojo_pe4; dojo_po5 += 16)
            __builtin_prefetch(&C[dojo_po5], 1, 3);
          __builtin_prefetch(&C[dojo_pe4], 1, 3);
        ...

Guarantees: every index is clamped into the array's bounds before any address is formed
(the box of the next iteration of a loop's last iteration lies outside the array), so no
out-of-bounds pointer arithmetic happens; every line of a row's range is prefetched whatever
the array's alignment: addresses a line apart from the row's first element, then its last
element (at most one line prefetched twice; no division, so a row of constant extent
unrolls into a few instructions: this code runs once per register tile, and a per-line
modulo cost 3 % of an AVX2 GEMM); an empty range prefetches nothing. The statement reads
and writes nothing, so the program's results are unchanged.
"""
from __future__ import annotations

from .. import ir
from ..affine import simplify, sub
from ..poly import const_value
from ..printer import print_stmt
from .c_expr import ITEMSIZE

CLAMP = ("static inline int64_t dojo_clamp(int64_t v, int64_t n) "
         "{ return v < 0 ? 0 : v >= n ? n - 1 : v; }")
MAX_UNROLL = 64          # rows of a constant count are unrolled up to this many


def writes(body, array: str) -> bool:
    """True when an assignment anywhere in ``body`` (nested loops included) writes ``array``."""
    return any(isinstance(s, ir.Assign) and s.target.array == array for s in ir.walk_stmts(body))


def prefetch_lines(gen, stmt: ir.Prefetch, body) -> list:
    """The C lines of ``stmt`` (unindented, relative to the block), ``body`` being the body
    that holds it (for RW); ``gen`` is the C generator (names, buffers, helpers, target)."""
    buf = gen.ex.buffers[stmt.array]
    dims = [const_value(d, gen.sizes) for d in buf.dims]
    step = max(1, gen.target.cache_line_bytes // ITEMSIZE[buf.dtype])
    rw = 1 if writes(body, stmt.array) else 0
    gen.helpers.add("pfclamp", CLAMP)
    idx = lambda e: gen.ex.index(e)[0]
    lines = [f"/* {print_stmt(stmt)[0].strip()} */", "{"]
    pad = "  "
    row, closes = None, 0
    for d, (lo, hi) in enumerate(stmt.ranges[:-1]):
        lo, hi = simplify(lo), simplify(hi)
        rv = gen.fresh("pr")
        n = const_value(simplify(sub(hi, lo)), gen.sizes)
        if n == 1:                      # one row: no loop
            here = f"dojo_clamp({idx(lo)}, {dims[d]})"
        else:
            it = gen.fresh("pf")
            if n is not None and 1 < n <= MAX_UNROLL:
                lines.append(f"{pad}#pragma GCC unroll {n}")
            lines.append(f"{pad}for (int64_t {it} = {idx(lo)}; {it} < {idx(hi)}; ++{it}) {{")
            pad += "  "
            closes += 1
            here = f"dojo_clamp({it}, {dims[d]})"
        lines.append(f"{pad}const int64_t {rv} = "
                     f"{here if row is None else f'{row} * {dims[d]} + {here}'};")
        row = rv
    lo, hi = stmt.ranges[-1]
    last_dim = dims[-1]
    base = "" if row is None else f"{row} * {last_dim} + "
    lo_c, hi_c = idx(simplify(lo)), idx(simplify(hi))
    first, last, po = gen.fresh("pb"), gen.fresh("pe"), gen.fresh("po")
    lines.append(f"{pad}if ({lo_c} < {hi_c}) {{")
    lines.append(f"{pad}  const int64_t {first} = {base}dojo_clamp({lo_c}, {last_dim}), "
                 f"{last} = {base}dojo_clamp({hi_c} - 1, {last_dim});")
    lines.append(f"{pad}  for (int64_t {po} = {first}; {po} < {last}; {po} += {step})")
    lines.append(f"{pad}    __builtin_prefetch(&{buf.cname}[{po}], {rw}, 3);")
    lines.append(f"{pad}  __builtin_prefetch(&{buf.cname}[{last}], {rw}, 3);")
    lines.append(f"{pad}}}")
    for _ in range(closes):
        pad = pad[:-2]
        lines.append(f"{pad}}}")
    lines.append("}")
    return lines


def element_prefetch(gen, stmt: ir.Prefetch, rw: int, sub: dict) -> str:
    """The C line that prefetches the line of the first element of ``stmt``'s box with the
    iterators in ``sub`` replaced (a vector iteration's offset), each index clamped into its
    dimension: a vector loop's prefetch (``c_vector.py``), one element per iteration."""
    buf = gen.ex.buffers[stmt.array]
    dims = [const_value(d, gen.sizes) for d in buf.dims]
    gen.helpers.add("pfclamp", CLAMP)
    flat = None
    for (lo, _), n in zip(stmt.ranges, dims):
        index = gen.ex.index(simplify(ir.substitute(lo, sub) if sub else lo))[0]
        here = f"dojo_clamp({index}, {n})"
        flat = here if flat is None else f"({flat}) * {n} + {here}"
    return f"__builtin_prefetch(&{buf.cname}[{flat}], {rw}, 3);"


def cuda_comment(stmt: ir.Prefetch) -> str:
    """The one line the CUDA generator emits for a prefetch: a comment (a CPU cache hint has
    no GPU code; results are the same, since it computes nothing)."""
    return f"/* {print_stmt(stmt)[0].strip()}: a CPU cache hint, no GPU code */"
