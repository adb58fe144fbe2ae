"""Parallel loops as outlined functions (used by ``c.CGenerator``).

A ``parallel`` loop ``for (i = lo; i < hi; ++i) BODY`` becomes

    static void KERNEL_parN(int64_t dojo_lo, int64_t dojo_hi, <free variables>)
    { const int64_t <sizes>; <lo <= dojo_lo < dojo_hi <= hi assumed>;
      for (int64_t i = dojo_lo; i < dojo_hi; ++i) BODY }
    ...
    #pragma omp parallel
    { <this thread's contiguous share b..e of lo..hi, as schedule(static)>;
      if (b < e) KERNEL_parN(b, e, ...); }

When the iterations do unequal work (``varying_work``: a loop inside has a bound that uses
the parallel iterator outside ``min``/``max``, a triangle such as syr2k's
``for j in 0..i + 1``), contiguous shares
leave the thread with the last rows most of the work (three quarters of a triangle at two
threads); the iterations are then dealt round-robin instead, each thread calling the
function on ``t, t + nt, t + 2*nt, ...`` one iteration at a time (an inline loop gets
``schedule(static, 1)``, the same order).

The free variables are: the kernel arrays (in declaration order), then the array locals of
enclosing blocks the loop touches (``restrict`` pointers, ``const`` for those the loop does
not write: they are distinct objects, so ``restrict`` holds), then the enclosing iterators and scalar
locals it reads (by value, in order of first use). Without OpenMP the region is one call
over the whole range. gcc compiles the function without predictive commoning
(``DOJO_PARALLEL_BODY``): that pass stores values of the following iterations back after
the loop, which in a thread's share of the iterations are another thread's elements.
``outline`` declines (returns False, the caller then emits an inline ``omp parallel for``)
when the loop or a loop inside it is ``vector``: explicit vector code does not need gcc's
auto-vectorizer, and outlining it changed gcc 12's register allocation of register tiles
for the worse (matmul's AVX2 schedule: 8.2 -> 10.6 ms, accumulators copied between
registers at every step of the reduction); also when the loop writes a scalar local of an enclosing block, or
when it uses a name the generator knows as neither an array, a local nor an iterator.
"""
from __future__ import annotations

from .. import ir

_LO, _HI = "dojo_lo", "dojo_hi"
_OMP_INCLUDE = "#ifdef _OPENMP\n#include <omp.h>\n#endif"
# gcc's predictive commoning (-O3) keeps values of the next iterations in registers and
# stores them back after the loop: right for one thread, but in a thread's share of a
# parallel loop those are the neighbouring thread's elements (a store data race, seen as
# wrong results of PolyBench seidel-2d after a random walk, 2 threads, gcc 12)
_BODY_ATTRIBUTE = """#if defined(__GNUC__) && !defined(__clang__)
#define DOJO_PARALLEL_BODY __attribute__((optimize("no-predictive-commoning")))
#else
#define DOJO_PARALLEL_BODY
#endif"""


def _used_names(loop: ir.Loop) -> tuple:
    """(names read or written in order of first use, names declared inside, names
    written) of a loop, its bounds included."""
    used, declared, written = [], {loop.iterator}, set()

    def note(expr):
        for e in ir.walk_expr(expr):
            name = e.array if isinstance(e, ir.Access) else e.name if isinstance(e, ir.Var) \
                else None
            if name is not None and name not in used:
                used.append(name)

    note(loop.lo)
    note(loop.hi)
    for stmt in ir.walk_stmts(loop.body):
        if isinstance(stmt, ir.Loop):
            declared.add(stmt.iterator)
            note(stmt.lo)
            note(stmt.hi)
        elif isinstance(stmt, ir.Local):
            declared.add(stmt.name)
            for d in stmt.dims:
                note(d)
        elif isinstance(stmt, ir.Assign):
            note(stmt.target)
            note(stmt.value)
            written.add(stmt.target.array)
        elif isinstance(stmt, ir.Prefetch):
            note(ir.Access(stmt.array))
            for bound in stmt.bounds:
                note(bound)
    return used, declared, written


def varying_work(loop: ir.Loop) -> bool:
    """Does the work of an iteration of ``loop`` grow or shrink with its iterator: does a
    bound of a loop inside it use the iterator (``for j in 0..i + 1``, ``0..(i + 4) // 4``)?
    Uses inside ``min``/``max`` do not count (a partial last tile, a clipped time tile): all
    iterations but those at the edges do the same work."""
    for inner in ir.loops(loop.body):
        if _uses_outside_min_max(inner.lo, loop.iterator) or \
                _uses_outside_min_max(inner.hi, loop.iterator):
            return True
    return False


def _uses_outside_min_max(expr, name: str) -> bool:
    if isinstance(expr, ir.Var):
        return expr.name == name
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        return False
    if isinstance(expr, ir.BinOp):
        children = (expr.lhs, expr.rhs)
    elif isinstance(expr, ir.Neg):
        children = (expr.operand,)
    elif isinstance(expr, ir.Call):
        children = expr.args
    elif isinstance(expr, ir.Access):
        children = expr.indices
    else:
        children = ()
    return any(_uses_outside_min_max(child, name) for child in children)


def _pointer(buf, written: bool) -> str:
    """The parameter of an array: ``restrict``, and ``const`` when the loop only reads it."""
    return f"{'' if written else 'const '}{buf.ctype} *restrict {buf.cname}"


def outline(gen, loop: ir.Loop, depth: int) -> bool:
    """Emit ``loop`` (annotated parallel) as a region calling an outlined function (see
    the module docstring); False, with nothing emitted, where that does not apply."""
    if any("vector" in l.annotations for l in [loop, *ir.loops(loop.body)]):
        return False
    used, declared, written = _used_names(loop)
    sizes = gen.sizes
    kinds = {d.name: d.kind for d in gen.program.arrays}
    pointers, values = [], []
    for name in used:
        if name in declared or name in sizes:
            continue
        buf = gen.ex.buffers.get(name)
        if buf is not None and name in kinds:
            pointers.append((_pointer(buf, name in written), buf.cname, name))
        elif buf is not None and buf.scalar_var:
            if name in written:
                return False
            values.append((f"{buf.ctype} {buf.cname}", buf.cname))
        elif buf is not None and buf.dims:
            pointers.append((_pointer(buf, name in written), buf.cname, name))
        elif name in gen.names and buf is None:
            values.append((f"int64_t {gen.names[name]}", gen.names[name]))
        else:
            return False
    order = {d.name: k for k, d in enumerate(gen.program.arrays)}
    pointers.sort(key=lambda p: order.get(p[2], len(order)))
    params = [p[:2] for p in pointers] + values
    fname = f"{gen.function_name}_par{len(gen.outlined) + 1}"
    lo = gen.ex.index(loop.lo)[0]
    hi = gen.ex.index(loop.hi)[0]

    saved, gen.lines = gen.lines, []
    if gen.program.sizes:
        names = [gen.names[n] for n, _ in gen.program.sizes]
        gen.emit(1, "const int64_t " + ", ".join(
            f"{gen.names[n]} = {v}" for n, v in gen.program.sizes) + ";")
        gen.emit(1, "".join(f"(void){n}; " for n in names).rstrip())
    # the share lies within the loop's bounds: without this fact gcc could not prove that
    # rows and columns of corr[i, j] and corr[j, i] differ (PolyBench correlation, 3.7x)
    gen.emit(1, f"if ({_LO} < {lo} || {_HI} > {hi}) __builtin_unreachable();")
    gen.emit(1, gen.header(loop, _LO, _HI) + " {")
    gen.block(loop.body, 2)
    gen.emit(1, "}")
    body, gen.lines = gen.lines, saved
    signature = ", ".join([f"int64_t {_LO}", f"int64_t {_HI}"] + [p for p, _ in params])
    gen.outlined.append([f"DOJO_PARALLEL_BODY static void {fname}({signature})", "{"] + body
                        + ["}"])
    gen.helpers.add("0omp", _OMP_INCLUDE)
    gen.helpers.add("0omp_body", _BODY_ATTRIBUTE)

    rest = [a for _, a in params]
    gen.emit(depth, "{")
    gen.emit(depth + 1, f"const int64_t {_LO} = {lo}, {_HI} = {hi};")
    gen.emit(depth + 1, "#ifdef _OPENMP")
    gen.emit(depth + 1, "#pragma omp parallel")
    gen.emit(depth + 1, "{")
    threads = "const int64_t dojo_t = omp_get_thread_num(), dojo_nt = omp_get_num_threads();"
    if varying_work(loop):
        gen.emit(depth + 2, threads)
        gen.emit(depth + 2, f"for (int64_t dojo_i = {_LO} + dojo_t; dojo_i < {_HI}; "
                            "dojo_i += dojo_nt)")
        gen.emit(depth + 3, f"{fname}({', '.join(['dojo_i', 'dojo_i + 1'] + rest)});")
    else:
        gen.emit(depth + 2, f"const int64_t dojo_n = {_HI} > {_LO} ? {_HI} - {_LO} : 0;")
        gen.emit(depth + 2, threads)
        gen.emit(depth + 2, "const int64_t dojo_q = dojo_n / dojo_nt, "
                            "dojo_r = dojo_n % dojo_nt;")
        gen.emit(depth + 2, f"const int64_t dojo_b = {_LO} + dojo_t * dojo_q + "
                            "(dojo_t < dojo_r ? dojo_t : dojo_r);")
        gen.emit(depth + 2, "const int64_t dojo_e = dojo_b + dojo_q + (dojo_t < dojo_r);")
        gen.emit(depth + 2,
                 f"if (dojo_b < dojo_e) {fname}({', '.join(['dojo_b', 'dojo_e'] + rest)});")
    gen.emit(depth + 1, "}")
    gen.emit(depth + 1, "#else")
    gen.emit(depth + 1, f"if ({_LO} < {_HI}) {fname}({', '.join([_LO, _HI] + rest)});")
    gen.emit(depth + 1, "#endif")
    gen.emit(depth, "}")
    return True
