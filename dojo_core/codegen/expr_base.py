"""What the C and CUDA expression printers (``c_expr``, ``cuda_expr``) share: the set of
helpers a translation unit uses, the templates of the float helpers, and the lowering of
integer index expressions and array accesses, with hooks for what each target spells its
own way (integer width, helper names, how an array is reached).
"""
from __future__ import annotations

from .. import ir
from .scalar import ADD, BIN_PREC, MUL, PRIMARY, UNARY, ValueLowering, paren

FLOAT_HELPER_TEMPLATES = {
    "max": "{max_note}{D} {T} dojo_max_{t}({T} a, {T} b) {{ return (a > b || a != a) ? a : b; }}",
    "min": "{D} {T} dojo_min_{t}({T} a, {T} b) {{ return (a < b || a != a) ? a : b; }}",
    "fmod": """{mod_note}{D} {T} dojo_mod_{t}({T} a, {T} b)
{{
  {T} r = fmod{s}(a, b);
  if (b == 0) return r;
  if (r != 0) return ((r < 0) != (b < 0)) ? r + b : r;
  return copysign{s}(0, b);
}}""",
    "ffloordiv": """{D} {T} dojo_floordiv_{t}({T} a, {T} b)
{{
  {T} m = fmod{s}(a, b), d, f;
  if (b == 0) return a / b;
  d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return copysign{s}(0, a / b);
  f = floor{s}(d);
  return (d - f > {half}) ? f + 1 : f;
}}""",
}


def float_helpers(types, qualifiers: str, notes: bool, suffixed_half: bool) -> dict:
    """``{"max_f32": text, ...}``: numpy's NaN-propagating maximum/minimum and floor
    remainder/division of floats, for each (dtype, C type, libm suffix) of ``types``, each
    declared with ``qualifiers``; ``notes`` adds a comment before each max and fmod helper,
    ``suffixed_half`` writes the 0.5 of the rounding test with the libm suffix."""
    out = {}
    for t, ctype, suffix in types:
        for key, template in FLOAT_HELPER_TEMPLATES.items():
            out[f"{key}_{t}"] = template.format(
                D=qualifiers, T=ctype, t=t, s=suffix,
                half="0.5" + (suffix if suffixed_half else ""),
                max_note="/* numpy maximum/minimum: NaN propagates */\n" if notes else "",
                mod_note="/* numpy remainder and floor_divide of floats */\n" if notes else "")
    return out


class HelperSet:
    """The helpers (``dojo_*`` functions) a translation unit uses: ``text()`` gives each
    used one once, in the order of ``HELPER_TEXT`` (set by a subclass), so the generated
    text is deterministic and holds only what the program needs."""

    HELPER_TEXT: dict = {}

    def __init__(self):
        self.used = set()

    def use(self, name: str) -> None:
        """Mark a helper used; KeyError for a name ``HELPER_TEXT`` does not have."""
        if name not in self.HELPER_TEXT:
            raise KeyError(name)
        self.used.add(name)

    def text(self) -> list:
        return [text for name, text in self.HELPER_TEXT.items() if name in self.used]


class IndexLowering(ValueLowering):
    """Index, flattened-index and array-access text for one program; a subclass supplies
    ``literal``, ``error``, ``buffer``, ``INDEX_TYPE`` (the dtype of index literals),
    ``FLAT_TERM_PREC`` and the hooks ``index_var``, ``index_helper``, ``plain_division``
    and ``direct_lvalue``."""

    INDEX_TYPE = "i64"
    FLAT_TERM_PREC = ADD
    COMPACT_PRODUCTS = False

    def __init__(self, program: ir.Program, names: dict, helpers: HelperSet):
        self.program = program
        self.sizes = program.size_values
        self.names = names
        self.helpers = helpers
        self.buffers = {}

    # ------------------------------------------------------------------ hooks

    def index_var(self, name: str, wide: bool):
        """(code, prec) of an iterator or size read in an index."""
        return name, PRIMARY

    def index_helper(self, name: str, wide: bool) -> str:
        """The helper for floordiv, mod, min or max of indices."""
        return name

    def plain_division(self, expr) -> bool:
        """May ``//`` or ``%`` of indices be C's ``/`` and ``%`` (a non-negative dividend
        and a positive constant divisor)?"""
        raise NotImplementedError

    def direct_lvalue(self, buf, acc):
        """The text of an access to ``buf`` when it is not a flat array's element, else None."""
        return None

    # ------------------------------------------------------------------ indices

    def index(self, expr, wide=False):
        """(code, prec) of an integer index or bound expression (``wide``: computed in the
        target's wide integer type, where it has one)."""
        if isinstance(expr, ir.Const):
            return self.literal(int(expr.value), self.INDEX_TYPE)
        if isinstance(expr, ir.Var):
            return self.index_var(self.names.get(expr.name, expr.name), wide)
        if isinstance(expr, ir.Neg):
            code, p = self.index(expr.operand, wide)
            return f"-{paren(code, p, UNARY + 1)}", UNARY
        if isinstance(expr, ir.BinOp) and expr.op in ("+", "-", "*"):
            p = BIN_PREC[expr.op]
            (lc, lp), (rc, rp) = self.index(expr.lhs, wide), self.index(expr.rhs, wide)
            lc, rc = paren(lc, lp, p), paren(rc, rp, p + 1)
            if self.COMPACT_PRODUCTS and expr.op == "*" and isinstance(expr.lhs, ir.Const) \
                    and expr.lhs.value >= 0 and isinstance(expr.rhs, ir.Var):
                return f"{lc}*{rc}", p
            return f"{lc} {expr.op} {rc}", p
        if isinstance(expr, ir.BinOp) and expr.op in ("//", "%"):
            if self.plain_division(expr):
                (lc, lp), (rc, rp) = self.index(expr.lhs, wide), self.index(expr.rhs, wide)
                op = "/" if expr.op == "//" else "%"
                return f"{paren(lc, lp, MUL)} {op} {paren(rc, rp, MUL + 1)}", MUL
            name = self.index_helper("floordiv" if expr.op == "//" else "mod", wide)
            self.helpers.use(name)
            a, b = self.index(expr.lhs, wide)[0], self.index(expr.rhs, wide)[0]
            return f"dojo_{name}({a}, {b})", PRIMARY
        if isinstance(expr, ir.Call) and expr.func in ("min", "max") and len(expr.args) == 2:
            name = self.index_helper(expr.func, wide)
            self.helpers.use(name)
            a, b = (self.index(x, wide)[0] for x in expr.args)
            return f"dojo_{name}({a}, {b})", PRIMARY
        raise self.error(f"not an integer index expression: {expr!r}", expr)

    def dim_code(self, dim):
        """(code, prec) of an array dimension."""
        return self.index(dim)

    def flat_index(self, buf, indices) -> str:
        """Row-major flattened index (Horner form) of an access to a flat buffer; the first
        index is widened to long long when ``buf.wide`` and it is multiplied."""
        code, prec = None, PRIMARY
        for k, e in enumerate(indices):
            ic, ip = self.index(e)
            if code is None:
                code, prec = ic, ip
                if buf.wide and len(indices) > 1:
                    code, prec = f"(long long){paren(code, prec, UNARY)}", UNARY
                continue
            dc, dp = self.dim_code(buf.dims[k])
            code = (f"{paren(code, prec, MUL)} * {paren(dc, dp, MUL + 1)} + "
                    f"{paren(ic, ip, self.FLAT_TERM_PREC)}")
            prec = ADD
        return code if code is not None else "0"

    def lvalue(self, acc: ir.Access) -> str:
        """The text of an access, readable and assignable."""
        buf = self.buffer(acc.array, acc)
        direct = self.direct_lvalue(buf, acc)
        if direct is not None:
            return direct
        if not acc.indices:
            return f"{buf.cname}[0]"
        return f"{buf.cname}[{self.flat_index(buf, acc.indices)}]"
