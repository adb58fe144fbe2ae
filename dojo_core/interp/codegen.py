"""Translation of a Dojo IR program to Python source for the reference interpreter.

``generate(program, vectorize)`` returns ``(source, namespace)``: exec'ing the source in
the namespace defines ``kernel(*arrays)`` taking one numpy array per declared array, in
declaration order, and updating them in place. The semantics it implements and the rule
that decides which loop nests become numpy operations are documented in
``dojo_core.interp``; ``interp.regions`` holds the static half of that rule.

Python names: arrays ``a_NAME`` (flat views ``f_NAME``), iterators ``v_NAME``, constants
``k_N``, dtypes ``t_NAME``/``d_NAME``; generated names start with ``r`` and a number;
helpers live in ``rt`` (``interp.runtime``). Sizes are folded in as integer literals.
Expressions are translated by ``interp.exprs.Translator``.
"""
from __future__ import annotations

import numpy as np

from . import runtime as rt
from .. import ir
from .exprs import Array, TranslationError, Translator, numpy_dtype
from .regions import region_chain, region_plan, statically_injective, uses_vars

__all__ = ["generate", "TranslationError", "numpy_dtype"]

MAX_FOR_DEPTH = 15          # CPython allows 20 statically nested blocks per function
SMALL_REGION = 16           # iteration sets smaller than this run as Python loops
MEMO_ENTRIES = 64           # iteration sets remembered per region (per enclosing values)
MEMO_POINTS = 1 << 14       # ... when they are at most this large
PRECOMPUTED_POINTS = 1 << 16  # fixed iteration sets up to this size are built once


class Generator(Translator):
    def __init__(self, program: ir.Program, vectorize: bool):
        super().__init__(program)
        self.vectorize = vectorize

    # ------------------------------------------------------------------ statements

    def block(self, body, scope, depth, fors):
        scope = {"arrays": dict(scope["arrays"]), "iters": set(scope["iters"])}
        if not body:
            self.emit(depth, "pass")
        for stmt in body:
            if isinstance(stmt, ir.Local):
                self.local(stmt, scope, depth)
            elif isinstance(stmt, ir.Assign):
                self.assign(stmt, scope, depth)
            elif isinstance(stmt, ir.Loop):
                self.loop(stmt, scope, depth, fors)
            else:
                raise TranslationError(f"unknown statement {stmt!r}")

    def local_array(self, stmt, scope, private=None) -> Array:
        dims = tuple(self.dim(d, scope) for d in stmt.dims)
        return Array(self.ident(stmt.name), stmt.dtype, dims, local=True, private=private)

    def local(self, stmt, scope, depth):
        arr = scope["arrays"][stmt.name] = self.local_array(stmt, scope)
        if arr.fixed:        # copying a ready buffer is cheaper than np.full
            blank = f"r{self.fresh()}_blank"
            self.names[blank] = rt.alloc([int(d) for d in arr.dims], arr.np)
            self.emit(depth, f"a_{arr.name} = {blank}.copy()")
        else:
            shape = "(" + "".join(d + ", " for d in arr.dims) + ")"
            self.emit(depth, f"a_{arr.name} = rt.alloc({shape}, {self.dtype_obj(arr.np)})")

    def assign(self, stmt, scope, depth):
        arr = self.array(scope, stmt.target.array)
        code, _ = self.value(stmt.value, arr.ctx, scope)
        target = self.subscript(stmt.target, scope, frozenset())
        rhs = self.combine(stmt.op, target, code, arr)
        self.emit(depth, f"{target} = {rhs}")

    @staticmethod
    def combine(op, current, code, arr) -> str:
        rhs = {"=": code, "+=": f"({current} + {code})", "*=": f"({current} * {code})",
               "max=": f"np.maximum({current}, {code})",
               "min=": f"np.minimum({current}, {code})"}[op]
        if arr.dtype == "i8":
            return f"rt.wrap_i8({rhs})"
        return f"rt.round_bf16({rhs})" if arr.dtype == "bf16" else rhs

    def loop(self, stmt, scope, depth, fors):
        if fors >= MAX_FOR_DEPTH:      # start a fresh function: Python limits nested blocks
            name = f"r{self.fresh()}_nest"
            self.emit(depth, f"def {name}():")
            self.loop(stmt, scope, depth + 1, 0)
            self.emit(depth, f"{name}()")
            return
        chain, stmts = region_chain(stmt)
        if self.vectorize and stmts is not None:
            plan = region_plan(self, chain, stmts, scope)
            if plan is not None:
                self.region(chain, stmts, plan, 0, scope, depth, fors)
                return
        self.for_header(stmt, scope, depth)
        inner = {"arrays": scope["arrays"], "iters": scope["iters"] | {stmt.iterator}}
        self.block(stmt.body, inner, depth + 1, fors + 1)

    def for_header(self, stmt, scope, depth):
        lo, hi = self.index(stmt.lo, scope), self.index(stmt.hi, scope)
        self.emit(depth, f"for v_{self.ident(stmt.iterator)} in range({lo}, {hi}):")

    # ------------------------------------------------------------------ vectorised regions

    def region(self, chain, stmts, plan, m, scope, depth, fors):
        """Loops chain[m:] around stmts, as numpy operations when the plan allows it at this
        depth, else a Python loop over chain[m] around the region chain[m+1:]."""
        if fors >= MAX_FOR_DEPTH:
            name = f"r{self.fresh()}_nest"
            self.emit(depth, f"def {name}():")
            self.region(chain, stmts, plan, m, scope, depth + 1, 0)
            self.emit(depth, f"{name}()")
            return
        loops = chain[m:]
        names = [lp.iterator for lp in loops]
        vset = frozenset(names)
        inner = {"arrays": scope["arrays"], "iters": scope["iters"] | vset}
        checks, vector_ok = [], True
        for x, (f, mode) in plan.items():
            if mode == "at" or statically_injective(self, f, names):
                continue
            if any(not uses_vars(ir.Access(x, f), {n}) for n in names):
                vector_ok = False          # a loop the write does not depend on: not injective
                break
            checks.append(x)
        if not vector_ok:
            self.fallback(chain, stmts, plan, m, scope, depth, fors)
            return
        r = self.fresh()
        outer = scope["iters"]
        inner = {"arrays": dict(inner["arrays"]), "iters": inner["iters"]}
        privates = [s for s in stmts if isinstance(s, ir.Local)]
        for s in privates:      # a local of the innermost body: one private copy per point
            inner["arrays"][s.name] = self.local_array(s, scope, private=f"r{r}_p")
        build = []
        for j, lp in enumerate(loops):
            lvec = frozenset(names[:j])
            sub = {"arrays": scope["arrays"], "iters": outer | lvec}
            lo, hi = self.index(lp.lo, sub, lvec), self.index(lp.hi, sub, lvec)
            if j:
                build.append(f"if r{r}_it is not None:")
                build.append(f"    {', '.join(f'v_{n}' for n in names[:j])}, = r{r}_it")
                build.append(f"    r{r}_it, r{r}_n = rt.expand(r{r}_it, r{r}_n, {lo}, {hi})")
            else:
                build.append(f"r{r}_it, r{r}_n = rt.expand((), 1, {lo}, {hi})")
        flats = {}
        for x, (f, _) in plan.items():
            arr = self.array(scope, x)
            terms = [f"({self.index(e, inner, vset)}) * {s}" for e, s in zip(f, arr.strides())]
            flats[x] = f"rt.flat(r{r}_n, {' + '.join(terms) or '0'})"
        env = {"np": np, "rt": rt}
        closed = not any(uses_vars(e, outer) for lp in loops for e in (lp.lo, lp.hi))
        if closed:
            exec("\n".join(build), env)
            points, count = env[f"r{r}_it"], env[f"r{r}_n"]
            if points is None or count < SMALL_REGION:
                self.fallback(chain, stmts, plan, m, scope, depth, fors)
                return
            closed = count <= PRECOMPUTED_POINTS
        if closed:
            # the iteration set depends on the sizes only: keep it, and with it the flat
            # indices (and their injectivity) that do not depend on enclosing iterators
            self.names[f"r{r}_set"] = points
            build = [f"{', '.join(f'v_{n}' for n in names)}, = r{r}_set", f"r{r}_n = {count}"]
            env[f"r{r}_set"] = points
            exec(build[0], env)
            for x, (f, _) in plan.items():
                if uses_vars(ir.Access(x, f), outer) or not self.array(scope, x).fixed:
                    continue
                index = eval(flats[x], env)
                if x in checks:
                    if not rt.injective(index):
                        self.fallback(chain, stmts, plan, m, scope, depth, fors)
                        return
                    checks.remove(x)
                self.names[f"r{r}g_{x}"] = index
                flats[x] = f"r{r}g_{x}"
            guarded = False
        else:
            # bounds depend on enclosing iterators: memoise the set per their values
            guarded = True
            key = sorted({v.name for lp in loops for e in (lp.lo, lp.hi)
                          for v in ir.walk_expr(e) if isinstance(v, ir.Var) and v.name in outer})
            key = "(" + "".join(f"v_{k}, " for k in key) + ")"
            self.names[f"r{r}_memo"] = {}
            build = [f"r{r}_it, r{r}_n = r{r}_memo.get({key}, (None, None))",
                     f"if r{r}_n is None:"] + ["    " + line for line in build] + [
                     f"    if len(r{r}_memo) < {MEMO_ENTRIES} and r{r}_n <= {MEMO_POINTS}:",
                     f"        r{r}_memo[{key}] = (r{r}_it, r{r}_n)",
                     f"r{r}_ok = r{r}_it is not None and r{r}_n >= {SMALL_REGION}"]
            build.append(f"if r{r}_ok:")
            build.append(f"    {', '.join(f'v_{n}' for n in names)}, = r{r}_it")
        for line in build:
            self.emit(depth, line)
        d = depth + guarded
        for x, code in flats.items():
            self.emit(d, f"r{r}x_{x} = {code}")
        if checks:
            self.emit(d, f"r{r}_ok = {' and '.join(f'rt.injective(r{r}x_{x})' for x in checks)}")
        if guarded or checks:
            self.emit(depth, f"if r{r}_ok:")
            self.vector_body(stmts, plan, r, inner, vset, depth + 1)
            self.emit(depth, "else:")
            self.fallback(chain, stmts, plan, m, scope, depth + 1, fors)
        else:
            self.vector_body(stmts, plan, r, inner, vset, depth)

    def fallback(self, chain, stmts, plan, m, scope, depth, fors):
        lp = chain[m]
        self.for_header(lp, scope, depth)
        inner = {"arrays": scope["arrays"], "iters": scope["iters"] | {lp.iterator}}
        if m + 1 < len(chain):
            self.region(chain, stmts, plan, m + 1, inner, depth + 1, fors + 1)
        else:
            self.block(stmts, inner, depth + 1, fors + 1)

    def vector_body(self, stmts, plan, r, scope, vset, depth):
        for x in plan:
            if self.array(scope, x).local:
                self.emit(depth, f"f_{x} = a_{x}.reshape(-1)")
        if any(isinstance(s, ir.Local) for s in stmts):
            self.emit(depth, f"r{r}_p = np.arange(r{r}_n)")
        for stmt in stmts:
            if isinstance(stmt, ir.Local):
                arr = scope["arrays"][stmt.name]
                shape = "".join(f", {d}" for d in arr.dims)
                self.emit(depth, f"a_{arr.name} = rt.alloc((r{r}_n{shape},), {self.dtype_obj(arr.np)})")
            else:
                self.vector_assign(stmt, plan, r, scope, vset, depth)

    def vector_assign(self, stmt, plan, r, scope, vset, depth):
        x = stmt.target.array
        arr = self.array(scope, x)
        code, _ = self.value(stmt.value, arr.ctx, scope, vset)
        idx = f"r{r}x_{x}"
        if arr.private:
            target = self.subscript(stmt.target, scope, vset)
            self.emit(depth, f"{target} = {self.combine(stmt.op, target, code, arr)}")
        elif plan[x][1] == "at":
            ufunc = {"+=": "add", "*=": "multiply", "max=": "maximum", "min=": "minimum"}[stmt.op]
            self.emit(depth, f"np.{ufunc}.at(f_{x}, {idx}, {code})")
        else:
            rhs = self.combine(stmt.op, f"f_{x}[{idx}]", code, arr)
            self.emit(depth, f"f_{x}[{idx}] = {rhs}")

    # ------------------------------------------------------------------ program

    def kernel(self) -> str:
        scope = {"arrays": {}, "iters": set()}
        params = []
        for decl in self.program.arrays:
            name = self.ident(decl.name)
            dims = tuple(self.dim(d, scope) for d in decl.dims)
            scope["arrays"][name] = Array(name, decl.dtype, dims)
            params.append(f"a_{name}")
        self.emit(0, f"def kernel({', '.join(params)}):")
        for decl in self.program.arrays:
            if decl.kind != "in":
                self.emit(1, f"f_{decl.name} = a_{decl.name}.reshape(-1)")
        self.block(self.program.body, scope, 1, 0)
        return "\n".join(self.lines) + "\n"


def generate(program: ir.Program, vectorize: bool = True):
    """(source, namespace) defining ``kernel(*arrays)`` for ``program`` at its sizes;
    prefetches do nothing (they compute nothing), so they are left out."""
    gen = Generator(ir.without_prefetches(program), vectorize)
    source = gen.kernel()
    return source, gen.names
