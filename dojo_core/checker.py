"""The checker: every rule of DESIGN.md section 3, each error located at FILE:LINE:COL.

`check(program, filename)` returns the list of errors (empty when the program is valid).
Structural rules come first (names and scopes, ranks and dtypes, writes to inputs,
quasi-affine indices and bounds); when they all hold, the exact rules are proved with
islpy at the program's sizes (`poly.Model`): every access stays inside its array, and
every element of an `out` array, a `temp` or a local is written before it is read.
A valid program therefore never reads garbage nor touches memory outside its buffers.

Dtypes of a statement must agree, except for i8, which is promoted (C's integer
promotion): an i8 value mixes with i32 and i64 values and may be stored into any integer
array (`C[i, j] += A[i, k] * B[k, j]` with A, B i8 and C i32), and an i8 array also takes
i32 values (the store wraps modulo 256). i64 values are never stored into i8 arrays.

Bounded work (a kernel from anyone can be checked on a server): sizes are at most
MAX_SIZE, arrays and locals have at most MAX_RANK dimensions, an array at most
MAX_ARRAY_ELEMENTS elements and a local (a stack or register buffer) at most
MAX_LOCAL_ELEMENTS, loops nest at most MAX_LOOP_DEPTH deep; each is a located error.
The exact rules then run under a time budget (``budget_s``, CHECK_BUDGET_S by default,
counted from the start of ``check``): past it, checking stops with a located error at
the statement it had reached (the exact rules: ``checker_exact``).
"""
from __future__ import annotations

import re
import threading
import time

from . import ir
from .checker_exact import CHECK_BUDGET_S, err as _err, exact_checks
from .poly import NotAffine, affine_text, const_value
from .printer import print_expr

INT_KINDS = ("int", "idx") + ir.INT_DTYPES     # literal int, iterator/size value, int arrays
FLOAT_FUNCS = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf")
MAX_SIZE = 1 << 24
MAX_RANK = 8
MAX_ARRAY_ELEMENTS = 1 << 32
MAX_LOCAL_ELEMENTS = 1 << 20          # the most a transformation stages into a local, too
MAX_LOOP_DEPTH = 32
# one exact check at a time per process: a server's threads then never spend more than
# one core's worth of the GIL on checking, and other requests keep their latency
_EXACT_SLOT = threading.BoundedSemaphore(1)


def check(program: ir.Program, filename: str = "<input>", budget_s: float | None = None) -> list:
    """All errors of the program, sorted by position; [] means valid.  Takes about
    ``budget_s`` seconds at most (CHECK_BUDGET_S when None; one isl operation past it)."""
    deadline = time.monotonic() + (CHECK_BUDGET_S if budget_s is None else budget_s)
    structure = _Structure(program)
    errors = structure.run()
    if not errors and not _EXACT_SLOT.acquire(timeout=max(0.0, deadline - time.monotonic())):
        errors = [_err(program, "checking this kernel takes longer than its budget: other "
                                "kernels are being checked; try again")]
    elif not errors:
        try:
            errors = exact_checks(program, structure.local_scopes, deadline)
        except NotAffine as exc:   # the structural pass should have caught it
            errors = [_err(exc.node, f"not affine: {exc}")]
        finally:
            _EXACT_SLOT.release()
    errors.sort(key=lambda e: (e.line, e.col))
    return [e.located(filename) for e in errors]


class _Structure:
    """Names, scopes, ranks, dtypes and affinity, in one walk over the program."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.sizes = program.size_values
        self.errors = []
        self.declared = {}          # every declared name -> node (names are kernel-unique)
        self.local_scopes = {}      # local name -> iterators of the loops around its block

    def run(self) -> list:
        p = self.program
        for name, value in p.sizes:
            self._declare(name, p)
            if value < 1:
                self.errors.append(_err(p, f"size {name} must be at least 1, got {value}"))
            elif value > MAX_SIZE:
                self.errors.append(_err(p, f"size {name} is {value}; at most {MAX_SIZE}"))
        if any(e.message.startswith("size ") for e in self.errors):
            return self.errors
        arrays = {}
        for decl in p.arrays:
            self._declare(decl.name, decl)
            self._check_dims(decl, decl.dims)
            arrays[decl.name] = decl
        self._body(p.body, dict(arrays), ())
        return self.errors

    def _declare(self, name, node):
        if name in self.declared:
            prev = getattr(self.declared[name], "loc", None)
            where = f" (first declared at {prev})" if prev else ""
            self.errors.append(_err(node, f"duplicate name '{name}'{where}"))
        else:
            self.declared[name] = node

    def _check_dims(self, node, dims):
        if len(dims) > MAX_RANK:
            self.errors.append(_err(node, f"'{node.name}' has {len(dims)} dimensions; at most {MAX_RANK}"))
            return
        elements = 1
        for d in dims:
            v = const_value(d, self.sizes)
            if v is None:
                self.errors.append(_err(d, f"dimension '{print_expr(d)}' must be an integer "
                                           "expression of sizes and constants", node))
            elif v < 1:
                self.errors.append(_err(d, f"dimension '{print_expr(d)}' is {v} at these "
                                           "sizes; it must be at least 1", node))
            else:
                elements *= v
        local = isinstance(node, ir.Local)
        most = MAX_LOCAL_ELEMENTS if local else MAX_ARRAY_ELEMENTS
        if elements > most:
            what = "local buffer" if local else "array"
            self.errors.append(_err(node, f"{what} '{node.name}' has {elements} elements at these "
                                          f"sizes; at most {most}"))

    def _body(self, body, arrays, iterators):
        arrays = dict(arrays)
        for stmt in body:
            if isinstance(stmt, ir.Local):
                self._declare(stmt.name, stmt)
                self._check_dims(stmt, stmt.dims)
                arrays[stmt.name] = stmt
                self.local_scopes[stmt.name] = iterators
            elif isinstance(stmt, ir.Loop):
                if len(iterators) >= MAX_LOOP_DEPTH:
                    self.errors.append(_err(stmt, f"loops nested more than {MAX_LOOP_DEPTH} deep"))
                    continue
                for bound in (stmt.lo, stmt.hi):
                    self._affine(bound, iterators, stmt, allow_minmax=True)
                if len(set(stmt.annotations)) != len(stmt.annotations):
                    self.errors.append(_err(stmt, f"loop '{stmt.iterator}' repeats an annotation"))
                self._declare(stmt.iterator, stmt)
                if re.match(r"s\d+$", stmt.iterator):
                    self.errors.append(_err(stmt, f"iterator name '{stmt.iterator}' is reserved: "
                                                  "s<digits> names statements in step texts"))
                self._body(stmt.body, arrays, iterators + (stmt.iterator,))
            elif isinstance(stmt, ir.Prefetch):
                self._prefetch(stmt, arrays, iterators)
            else:
                self._assign(stmt, arrays, iterators)

    def _prefetch(self, stmt, arrays, iterators):
        """A prefetch names an array of the kernel (not a local, not a scalar), one range per
        dimension, each bound affine in the iterators and sizes in scope (min/max allowed, as
        in loop bounds). Its box may reach outside the array: it is a hint, clamped there."""
        decl = arrays.get(stmt.array)
        if decl is None:
            self.errors.append(_err(stmt, f"unknown array '{stmt.array}'"))
            return
        if isinstance(decl, ir.Local):
            self.errors.append(_err(stmt, f"prefetch takes an array of the kernel; "
                                          f"'{stmt.array}' is a local"))
            return
        if not decl.dims:
            self.errors.append(_err(stmt, f"'{stmt.array}' is a scalar: nothing to prefetch"))
            return
        if len(stmt.ranges) != len(decl.dims):
            n, r = len(stmt.ranges), len(decl.dims)
            self.errors.append(_err(stmt, f"'{stmt.array}' has rank {r} but the prefetch gives "
                                          f"{n} range{'' if n == 1 else 's'}"))
            return
        for bound in stmt.bounds:           # one error per prefetch is enough
            if not self._affine(bound, iterators, stmt, allow_minmax=True):
                return

    def _affine(self, expr, iterators, stmt, allow_minmax=False) -> bool:
        for node in ir.walk_expr(expr):
            if isinstance(node, ir.Var) and node.name not in iterators and node.name not in self.sizes:
                known = self.declared.get(node.name)
                if isinstance(known, ir.Loop):
                    msg = f"iterator '{node.name}' is not in scope here"
                elif known is not None:
                    msg = f"'{node.name}' is not an integer iterator or size"
                else:
                    msg = f"unknown name '{node.name}'"
                self.errors.append(_err(node, msg, stmt))
                return False
        try:
            affine_text(expr, self.sizes, iterators, allow_minmax=allow_minmax)
        except NotAffine as exc:
            what = "bound" if allow_minmax else "index"
            self.errors.append(_err(exc.node or expr, f"non-affine {what} "
                                    f"'{print_expr(expr)}': {exc}", stmt))
            return False
        return True

    def _access(self, acc, arrays, iterators, stmt) -> bool:
        decl = arrays.get(acc.array)
        if decl is None:
            if acc.array in self.declared and isinstance(self.declared[acc.array], ir.Local):
                msg = f"local '{acc.array}' is not in scope here"
            else:
                msg = f"unknown array '{acc.array}'"
            self.errors.append(_err(acc, msg, stmt))
            return False
        if len(acc.indices) != len(decl.dims):
            n, r = len(acc.indices), len(decl.dims)
            self.errors.append(_err(acc, f"'{acc.array}' has rank {r} but is indexed with {n} "
                                         f"ind{'ex' if n == 1 else 'ices'}", stmt))
            return False
        return all(self._affine(i, iterators, stmt) for i in acc.indices)

    def _assign(self, stmt, arrays, iterators):
        tgt = stmt.target
        if not self._access(tgt, arrays, iterators, stmt):
            return
        decl = arrays[tgt.array]
        if isinstance(decl, ir.ArrayDecl) and decl.kind == "in":
            self.errors.append(_err(tgt, f"cannot write to '{tgt.array}': it is declared 'in'", stmt))
        kind = self._type(stmt.value, arrays, iterators, stmt)
        if kind is not None:
            self._store(kind, decl.dtype, stmt)

    def _store(self, kind, dtype, stmt):
        if kind == "bool":
            self.errors.append(_err(stmt.value, "a comparison is not a value: use select(cond, a, b)", stmt))
        elif _promotes(kind, dtype) or ir.PROMOTED_DTYPES.get(dtype) == kind:
            pass        # an i8 value into any integer array; an i32 value into i8 (wraps)
        elif kind in ir.DTYPES and kind != dtype:
            self.errors.append(_err(stmt.value, f"dtype mismatch: storing {kind} into "
                                                f"'{stmt.target.array}' of dtype {dtype}", stmt))
        elif kind == "float" and dtype in ir.INT_DTYPES:
            self.errors.append(_err(stmt.value, f"dtype mismatch: storing a float into "
                                                f"'{stmt.target.array}' of dtype {dtype}", stmt))

    def _type(self, expr, arrays, iterators, stmt):
        """The kind of a value expression: a dtype, 'int'/'float' literal, 'idx' or 'bool';
        None after reporting an error."""
        if isinstance(expr, ir.Const):
            return "int" if isinstance(expr.value, int) else "float"
        if isinstance(expr, ir.Var):
            if expr.name in iterators or expr.name in self.sizes:
                return "idx"
            decl = arrays.get(expr.name)
            if decl is not None:
                self.errors.append(_err(expr, f"'{expr.name}' has rank {len(decl.dims)}: index it as "
                                              f"{expr.name}[{', '.join('...' for _ in decl.dims)}]", stmt))
            elif expr.name in self.declared and isinstance(self.declared[expr.name], ir.Loop):
                self.errors.append(_err(expr, f"iterator '{expr.name}' is not in scope here", stmt))
            elif expr.name in self.declared and isinstance(self.declared[expr.name], ir.Local):
                self.errors.append(_err(expr, f"local '{expr.name}' is not in scope here", stmt))
            else:
                self.errors.append(_err(expr, f"unknown name '{expr.name}'", stmt))
            return None
        if isinstance(expr, ir.Access):
            if not self._access(expr, arrays, iterators, stmt):
                return None
            return arrays[expr.array].dtype
        if isinstance(expr, ir.Neg):
            k = self._type(expr.operand, arrays, iterators, stmt)
            if k == "bool":
                self.errors.append(_err(expr, "cannot negate a comparison", stmt))
                return None
            return k
        if isinstance(expr, ir.BinOp):
            a = self._type(expr.lhs, arrays, iterators, stmt)
            b = self._type(expr.rhs, arrays, iterators, stmt)
            if a is None or b is None:
                return None
            if expr.op in ir.COMPARE_OPS:
                return None if self._combine(a, b, expr, stmt) is None else "bool"
            k = self._combine(a, b, expr, stmt)
            if k is None:
                return None
            if expr.op in ("//", "%") and k not in INT_KINDS:
                self.errors.append(_err(expr, f"'{expr.op}' needs integer operands, got {k}", stmt))
                return None
            if expr.op == "/" and k in INT_KINDS:
                return "float"    # '/' is true division: 1 / M is a float
            return k
        if isinstance(expr, ir.Call):
            kinds = [self._type(a, arrays, iterators, stmt) for a in expr.args]
            if None in kinds:
                return None
            if expr.func == "select":
                if kinds[0] != "bool":
                    self.errors.append(_err(expr, "select() needs a comparison as its first argument", stmt))
                    return None
                return self._combine(kinds[1], kinds[2], expr, stmt)
            if "bool" in kinds:
                self.errors.append(_err(expr, "a comparison is not a number: use select(cond, a, b)", stmt))
                return None
            k = kinds[0] if len(kinds) == 1 else self._combine(kinds[0], kinds[1], expr, stmt)
            if k is None:
                return None
            if expr.func in FLOAT_FUNCS + ("pow",):
                if k in ir.INT_DTYPES:
                    self.errors.append(_err(expr, f"{expr.func}() needs a float argument, got {k}", stmt))
                    return None
                return k if k in ir.FLOAT_DTYPES else "float"
            return k
        return None

    def _combine(self, a, b, expr, stmt):
        if "bool" in (a, b):
            self.errors.append(_err(expr, "a comparison is not a number: use select(cond, a, b)", stmt))
            return None
        da = a if a in ir.DTYPES else None
        db = b if b in ir.DTYPES else None
        if da and db and _promotes(da, db):
            da = db             # i8 beside i32 or i64: promoted to it
        elif da and db and _promotes(db, da):
            db = da
        if da and db and da != db:
            self.errors.append(_err(expr, f"dtype mismatch: {da} and {db}", stmt))
            return None
        dtype = da or db
        if dtype:
            if dtype in ir.INT_DTYPES and "float" in (a, b):
                self.errors.append(_err(expr, f"dtype mismatch: a float constant with {dtype}", stmt))
                return None
            return dtype
        if "float" in (a, b):
            return "float"
        return "idx" if "idx" in (a, b) else "int"


def _promotes(a, b) -> bool:
    """Is a value of dtype a promoted to the integer dtype b (i8 to i32 or i64)?"""
    return a in ir.PROMOTED_DTYPES and b in ir.INT_DTYPES and b != a
