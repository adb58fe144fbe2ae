"""The checker's exact rules, proved with islpy at the program's sizes (``poly.Model``):
every access stays inside its array, and every element of an ``out`` array, a ``temp`` or
a local is written before it is read.  ``checker.check`` runs them once the structural
rules hold, under its time budget; each error is a DojoError at the offending access."""
from __future__ import annotations

import time

import islpy as isl

from . import ir
from .errors import DojoError
from .poly import Model, const_value, lex_before_text, point_values
from .printer import print_expr

CHECK_BUDGET_S = 2.5


def err(node, message: str, fallback=None) -> DojoError:
    """A DojoError at ``node``'s location (else ``fallback``'s, else 1:1)."""
    loc = getattr(node, "loc", None) or getattr(fallback, "loc", None)
    return DojoError(message, loc.line if loc else 1, loc.col if loc else 1)


def _over_budget(stmt, deadline: float):
    if time.monotonic() > deadline:
        return err(stmt.assign, "checking this kernel takes longer than its budget "
                                 f"({CHECK_BUDGET_S:g} s by default); make it smaller")
    return None


def exact_checks(program: ir.Program, local_scopes: dict, deadline: float = float("inf")) -> list:
    """The exact rules' errors of a program that passed the structural ones: every access
    inside its array, every read of an out array, a temp or a local after a write of that
    element (``local_scopes``: local name -> the iterators of its block).  Past ``deadline``
    (``time.monotonic()``), one located error at the statement reached instead."""
    model = Model(program)
    dims = {d.name: d.dims for d in program.arrays}
    kinds = {d.name: d.kind for d in program.arrays}
    for s in ir.walk_stmts(program.body):
        if isinstance(s, ir.Local):
            dims[s.name] = s.dims
            kinds[s.name] = "local"
    errors = []
    for stmt in model.statements:
        late = _over_budget(stmt, deadline)
        if late:
            return [late]
        accesses = [stmt.assign.target] + [a for a in ir.walk_expr(stmt.assign.value)
                                           if isinstance(a, ir.Access)]
        for acc in accesses:
            err = _bounds_error(model, stmt, acc, dims[acc.array])
            if err:
                errors.append(err)
    if errors:
        return errors
    writers = {}
    for stmt in model.statements:
        writers.setdefault(stmt.assign.target.array, []).append(stmt)
    for stmt in model.statements:
        late = _over_budget(stmt, deadline)
        if late:
            return [late]
        for acc in ir.reads(stmt.assign):
            if kinds.get(acc.array) in ("out", "temp", "local"):
                err = _uninitialised_read(model, stmt, acc, writers.get(acc.array, []),
                                          local_scopes.get(acc.array), deadline)
                if err:
                    errors.append(err)
                    if err.message.startswith("checking this kernel takes longer"):
                        return [err]
    return errors


def _where(stmt, values) -> str:
    if not stmt.iterators:
        return ""
    return " (e.g. at " + ", ".join(f"{i} = {v}" for i, v in zip(stmt.iterators, values)) + ")"


def _bounds_error(model, stmt, acc, dims):
    idx = model.index_texts(stmt, acc)
    for k, (text, dim) in enumerate(zip(idx, dims)):
        extent = const_value(dim, model.sizes)
        bad = isl.Set(f"{{ [{stmt.vars_text()}] : {model.domain_text(stmt)} and "
                      f"({text} < 0 or {text} >= {extent}) }}")
        if not bad.is_empty():
            values = point_values(bad.lexmin().sample_point(), len(stmt.iterators))
            env = dict(zip(stmt.iterators, values))
            env.update(model.sizes)
            value = _eval_point(acc.indices[k], env)
            return err(acc, f"{print_expr(acc)} can be out of bounds: {print_expr(acc.indices[k])} "
                             f"= {value}, outside 0..{extent} (dimension {k})"
                             f"{_where(stmt, values)}", stmt.assign)
    return None


def _eval_point(expr, env):
    v = const_value(ir.substitute(expr, {n: ir.Const(x) for n, x in env.items()}), {})
    return "?" if v is None else v


def _uninitialised_read(model, reader, acc, writers, local_iters, deadline=float("inf")):
    idx = model.index_texts(reader, acc, "_r")   # _r / _w suffixes never collide
    outs = ", ".join(f"e{k}" for k in range(len(idx)))
    eqs = "".join(f" and e{k} = {t}" for k, t in enumerate(idx))
    rvars = reader.vars_text("_r")
    read = isl.Set(f"{{ [{rvars}{', ' if idx and reader.iterators else ''}{outs}] : "
                   f"{model.domain_text(reader, '_r')}{eqs} }}")
    sched_r = model.schedule_texts(reader, "_r")
    for w in writers:
        late = _over_budget(reader, deadline)
        if late:
            return late
        widx = model.index_texts(w, w.assign.target, "_w")
        weqs = "".join(f" and e{k} = {t}" for k, t in enumerate(widx))
        same_block = "".join(f" and v_{i}_w = v_{i}_r" for i in (local_iters or ()))
        wvars = w.vars_text("_w")
        before = lex_before_text(model.schedule_texts(w, "_w"), sched_r)
        body = f"{model.domain_text(w, '_w')}{weqs}{same_block} and {before}"
        cond = f"exists ({wvars} : {body})" if wvars else f"({body})"
        covered = isl.Set(f"{{ [{rvars}{', ' if idx and reader.iterators else ''}"
                          f"{outs}] : {cond} }}")
        read = read.subtract(covered)
        if read.is_empty():
            return None
    values = point_values(read.lexmin().sample_point(), len(reader.iterators))
    return err(acc, f"{print_expr(acc)} is read before it is written{_where(reader, values)}",
                reader.assign)
