"""Integer evaluation of quasi-affine IR expressions (indices, bounds, dims)."""
from __future__ import annotations

from .. import ir


def eval_int(expr, env: dict) -> int:
    """Value of an integer (quasi-affine) expression: + - * // % unary -, min, max;
    names from ``env``. Raises ValueError for anything else or an unknown name."""
    if isinstance(expr, ir.Const):
        v = expr.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
            raise ValueError(f"not an integer: {v!r}")
        return int(v)
    if isinstance(expr, ir.Var):
        if expr.name not in env:
            raise ValueError(f"unknown name {expr.name!r}")
        return int(env[expr.name])
    if isinstance(expr, ir.Neg):
        return -eval_int(expr.operand, env)
    if isinstance(expr, ir.BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        a, b = eval_int(expr.lhs, env), eval_int(expr.rhs, env)
        if expr.op in ("//", "%") and b == 0:
            raise ValueError("integer division by zero")
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0,
                "%": a % b if b else 0}[expr.op]
    if isinstance(expr, ir.Call) and expr.func in ("min", "max") and expr.args:
        vals = [eval_int(a, env) for a in expr.args]
        return min(vals) if expr.func == "min" else max(vals)
    raise ValueError(f"not an integer expression: {expr!r}")
