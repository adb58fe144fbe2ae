"""precompute E at L as NAME: compute the values that the expression E takes in one
iteration of loop L into a local buffer at the top of L's body, and read the buffer instead
(a cache read of a computed operand: the scaled panel of a GEMM).

    for k0 in 0..2:                                 for k0 in 0..2:
      for k1 in 0..128:                               local Ap: f32[8, 128]
        for i1 in 0..8:                               for i2 in 0..8:
          for j in 0..48:                     ==>       for k2 in 0..128:
            C[i1, j] += alpha * A[i1, 128*k0 + k1]        Ap[i2, k2] = alpha * A[i2, 128*k0 + k2]
                        * B[128*k0 + k1, j]           for k1 in 0..128:
                                                        for i1 in 0..8:
                                                          for j in 0..48:
                                                            C[i1, j] += Ap[i1, k1] * B[128*k0 + k1, j]

E is written as the printer prints it (spaces are ignored); every occurrence of it in L's
body is replaced. Its values vary through one array element ``X[e]`` (the same indices in
every occurrence); the buffer is the bounding box of ``X[e]`` over the loops inside L
(``footprint.py``, as ``stage`` copies it), holding E with ``X[e]`` at each point of the box.
The value is the same as before: E is computed in the statement's type once instead of at
each use (a vector loop that broadcast a computed scalar broadcasts a load instead).

Legal when E occurs in L, is not a plain access, iterator or constant, reads one element that
loops inside L change and otherwise only values fixed in an iteration of L, uses no iterator
of a loop inside L outside ``X``'s indices, stands outside ``select``, reads no array written
inside L, reads arrays of the statements' type (f32, f64 or an integer type; f16 and bf16 are
computed wider than they store), and the box is constant with at most 2^20 elements. The
result is re-checked with the checker where the box alone does not prove that every value
it reads is initialised (a local or temp array, or a box derived by islpy).
"""
from __future__ import annotations

from .. import ir
from ..checker import check as check_program
from ..printer import print_expr
from . import footprint as fp
from . import scope
from .base import NotApplicable, Transformation
from .util import declared_names, replace_at, with_body

NARROW = ("f16", "bf16")


def _normal(text: str) -> str:
    return "".join(text.split())


def _plain(expr) -> bool:
    return isinstance(expr, (ir.Access, ir.Const, ir.Var))


def _occurrences(stmts, wanted: str):
    """(statement, found inside a select) for each occurrence of the expression printed as
    ``wanted`` (normalized) in the statements' values, in textual order."""
    out = []

    def walk(stmt, expr, in_select):
        if _normal(print_expr(expr)) == wanted:
            out.append((stmt, in_select))
            return
        in_select = in_select or (isinstance(expr, ir.Call) and expr.func == "select")
        for kid in _children(expr):
            walk(stmt, kid, in_select)
    for s in ir.assignments(stmts):
        walk(s, s.value, False)
    return out


def _find(expr, wanted: str):
    """The sub-expression of ``expr`` printed as ``wanted`` (normalized), or None."""
    for e in ir.walk_expr(expr):
        if _normal(print_expr(e)) == wanted:
            return e
    return None


def _children(expr) -> tuple:
    """The value sub-expressions of an expression (an access's indices are not values)."""
    if isinstance(expr, ir.BinOp):
        return (expr.lhs, expr.rhs)
    if isinstance(expr, ir.Neg):
        return (expr.operand,)
    if isinstance(expr, ir.Call):
        return expr.args
    return ()


def _loose_iterators(expr, region: set) -> set:
    """Iterators of ``region`` that ``expr`` uses outside array indices."""
    if isinstance(expr, ir.Var):
        return {expr.name} & region
    return set().union(*(_loose_iterators(k, region) for k in _children(expr)))


class Precompute(Transformation):
    name = "precompute"
    usage_note = "EXPR as the printer prints it"

    @property
    def usage(self) -> str:
        return f"{self.name} EXPR at LOOP as NAME ({self.usage_note})"

    def parse(self, words):
        if len(words) < 5 or words[-2] != "as" or words[-4] != "at":
            raise self.usage_error()
        expr = " ".join(words[:-4])
        if not expr:
            raise self.usage_error("EXPR is missing")
        return expr, words[-3], words[-1]

    def format(self, params):
        expr, loop, name = params
        return f"{self.name} {expr} at {loop} as {name}"

    # ------------------------------------------------------------------ analysis

    def _plan(self, program, expr_text, loop_name):
        return scope.CACHE.get(program, ("precompute", _normal(expr_text), loop_name),
                               lambda: self._compute(program, expr_text, loop_name))

    def _compute(self, program, expr_text, loop_name):
        """A plan dict or the one-sentence reason there is none."""
        wanted = _normal(expr_text)
        table = scope.loop_table(program)
        if loop_name not in table:
            return f"there is no loop '{loop_name}'"
        loop, path, around = table[loop_name]
        if "vector" in loop.annotations:
            return (f"loop '{loop_name}' is vectorized and its body must stay free of loops; "
                    "precompute before vectorizing")
        found = _occurrences(loop.body, wanted)
        if not found:
            return f"the expression '{expr_text}' does not occur inside loop '{loop_name}'"
        expr = _find(found[0][0].value, wanted)
        text = print_expr(expr)
        if _plain(expr):
            return (f"'{text}' is already a plain access, iterator or constant "
                    "(stage its array instead)")
        if any(in_select for _, in_select in found):
            return f"'{text}' stands inside a select, which may not evaluate it"
        region = {l.iterator for l in fp.region_loops(loop.body)}
        loose = sorted(_loose_iterators(expr, region))
        if loose:
            return (f"'{text}' uses the iterator '{loose[0]}' of a loop inside "
                    f"'{loop_name}' outside an array index")
        reads = [e for e in ir.walk_expr(expr) if isinstance(e, ir.Access)]
        varying = {print_expr(a): a for a in reads if ir.var_names(a) & region}
        if not varying:
            return (f"'{text}' takes one value in an iteration of '{loop_name}' "
                    "(no loop inside it changes it)")
        if len(varying) > 1:
            return (f"'{text}' reads {len(varying)} elements that loops inside "
                    f"'{loop_name}' change ({', '.join(varying)}); it must read one")
        written = {s.target.array for s in ir.assignments(loop.body)}
        stale = sorted({a.array for a in reads} & written)
        if stale:
            return (f"'{stale[0]}' is written inside loop '{loop_name}', so values computed "
                    "at the start of each iteration would go stale")
        dtypes = {scope.declared_dtype(program, s.target.array) for s, _ in found}
        if len(dtypes) > 1:
            return f"'{text}' occurs in statements of different types ({', '.join(sorted(dtypes))})"
        dtype = dtypes.pop()
        if dtype in NARROW:
            return f"a {dtype} statement computes '{text}' in f32, wider than a {dtype} buffer"
        others = sorted({a.array for a in reads
                         if scope.visible_decl(program, path, a.array).dtype != dtype})
        if others:
            return f"'{others[0]}' is not of the statements' type {dtype}"
        (x,) = varying.values()
        decl = scope.visible_decl(program, path, x.array)
        stmts = {id(s) for s, _ in found}
        refs = [r for r in fp.loop_refs(program, loop_name, x.array, False)
                if id(r.stmt) in stmts and r.access == x and not r.write]
        try:
            box = fp.compute_box(program, around + [loop], refs, decl.dims)
        except fp.BoxError as exc:
            return (f"the elements of '{x.array}' that '{text}' reads in one iteration of "
                    f"'{loop_name}' have no usable bounding box ({exc})")
        if box.size > fp.MAX_ELEMENTS:
            return (f"'{text}' takes {box.size} values in '{loop_name}', more than the "
                    f"{fp.MAX_ELEMENTS} a local buffer may hold")
        # an exact box of an in/inout array (or one its accesses cover) is read where the
        # kernel already read it: only otherwise must the checker prove the copy initialised
        proved = box.exact and (scope.kind_of(decl) in ("in", "inout") or bool(box.covering))
        return dict(loop=loop, path=path, expr=expr, access=x, box=box, refs=refs,
                    dtype=ir.PROMOTED_DTYPES.get(dtype, dtype), proved=proved)

    def check(self, program, params):
        expr_text, loop_name, name = params
        plan = self._plan(program, expr_text, loop_name)
        if isinstance(plan, str):
            return plan
        problem = scope.name_problem(program, name)
        if problem:
            return problem
        if plan["proved"]:
            return None
        result = self._result(program, params, plan)
        return result if isinstance(result, str) else None

    def _result(self, program, params, plan):
        def build():
            new = _build(program, params[2], plan)
            errors = check_program(new)
            if errors:
                return (f"computing '{print_expr(plan['expr'])}' at the start of "
                        f"'{params[1]}' gives a program the checker rejects "
                        f"({errors[0].message})")
            return new
        return scope.CACHE.get(program, ("precompute-result",) + tuple(params), build)

    def apply(self, program, params):
        reason = self.check(program, params)
        if reason is not None:
            raise NotApplicable(reason)
        result = self._result(program, params, self._plan(program, params[0], params[1]))
        if isinstance(result, str):
            raise NotApplicable(result)
        return result

    # ------------------------------------------------------------------ enumeration

    def candidates(self, program):
        """For each assignment, each largest sub-expression that is not plain and that its
        innermost loop does not change (a broadcast operand there), at each loop around
        the statement, outermost first, under the default name."""
        seen = set()
        for loop, _, _ in scope.loop_table(program).values():
            for stmt in ir.assignments(loop.body):
                for expr in _broadcast_operands(program, stmt):
                    key = (print_expr(expr), loop.iterator)
                    if key not in seen:
                        seen.add(key)
                        yield key[0], loop.iterator, scope.default_name(program, "pre")


def _broadcast_operands(program, stmt) -> list:
    """invariant_operands of the statement's value in its innermost loop."""
    inner = _innermost_loop(program, stmt)
    return [] if inner is None else invariant_operands(stmt.value, inner)


def invariant_operands(expr, iterator: str) -> list:
    """The largest sub-expressions of ``expr`` that are not plain (an access, iterator or
    constant), read an array and do not use ``iterator``: the computed operands that a
    vector loop over ``iterator`` broadcasts. In textual order."""
    if not _plain(expr) and iterator not in ir.var_names(expr) and \
            any(isinstance(e, ir.Access) for e in ir.walk_expr(expr)):
        return [expr]
    return [found for kid in _children(expr) for found in invariant_operands(kid, iterator)]


def _innermost_loop(program, stmt):
    def go(body, loop):
        for s in body:
            if s is stmt:
                return loop
            if isinstance(s, ir.Loop):
                found = go(s.body, s.iterator)
                if found is not None:
                    return found
        return None
    return go(program.body, None)


def _build(program, name, plan):
    loop, path, expr, x, box, refs = (plan[k] for k in
                                      ("loop", "path", "expr", "access", "box", "refs"))
    taken = declared_names(program) | {name}
    region = {l.iterator for l in fp.region_loops(loop.body)}
    iters = fp.copy_iterators(taken, refs, box, region)
    local = ir.Local(name, plan["dtype"], box.local_dims(), None)
    copy = fp.copy_nest(box, iters, lambda li, ai: ir.Assign(
        ir.Access(name, li), "=",
        ir.map_expr(expr, lambda n: ir.Access(x.array, ai) if n == x else n)))
    use = ir.Access(name, box.local_index(x))
    wanted = _normal(print_expr(expr))
    body = _replace(loop.body, wanted, use)
    return replace_at(program, path, [with_body(loop, (local, copy) + body)])


def _replace(stmts, wanted: str, use) -> tuple:
    def expr(e):
        if _normal(print_expr(e)) == wanted:
            return use
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, expr(e.lhs), expr(e.rhs), e.loc)
        if isinstance(e, ir.Neg):
            return ir.Neg(expr(e.operand), e.loc)
        if isinstance(e, ir.Call):
            return ir.Call(e.func, tuple(expr(a) for a in e.args), e.loc)
        return e
    out = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            out.append(with_body(s, _replace(s.body, wanted, use)))
        elif isinstance(s, ir.Assign):
            out.append(ir.Assign(s.target, s.op, expr(s.value), s.loc))
        else:
            out.append(s)
    return tuple(out)


PRECOMPUTE = Precompute()
