"""Text -> IR. `parse` turns Dojo IR source into a Program or raises a located DojoError.

The grammar is indentation-structured (Lark's Indenter turns leading whitespace into
_INDENT/_DEDENT tokens). Bare names are resolved after parsing: a name that is a scalar
array or a scalar local in scope becomes Access(name, ()), `inf` becomes a constant, and
any other bare name is a Var (an iterator or a size; the checker rejects unknown ones).
A minus sign directly in front of a number literal is folded into the constant, so
`-1` is Const(-1) and `-(1)` is Neg(Const(1)); the printer relies on this.
"""
from __future__ import annotations

import math
import threading

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken,
                             VisitError)
from lark.indenter import DedentError, Indenter

from . import ir
from .errors import DojoError
from .parse_errors import dedent_line, describe, expected, first_code_after

GRAMMAR = r"""
start: _NL? header decl* stmt*
header: "kernel" NAME "(" [size ("," size)*] ")" _NL
size: NAME "=" INT
decl: KIND NAME ":" type _NL
type: NAME ["[" expr ("," expr)* "]"]
?stmt: loop | local | prefetch | assign
loop: "for" NAME "in" expr RANGE expr annotation* ":" _NL _INDENT stmt+ _DEDENT
annotation: NAME ("." NAME)*
local: "local" NAME ":" type ["in" NAME] _NL
prefetch: "prefetch" NAME "[" prange ("," prange)* "]" _NL
prange: expr [RANGE expr]
assign: target ASSIGN_OP expr _NL
target: NAME ["[" expr ("," expr)* "]"]
?expr: sum | sum CMP_OP sum -> compare
?sum: term | sum ADD_OP term -> binop
?term: factor | term MUL_OP factor -> binop
?factor: atom | NEG_NUMBER -> negative_number | "-" factor -> neg
?atom: NUMBER -> number
     | NAME -> name
     | NAME "[" expr ("," expr)* "]" -> access
     | NAME "(" [expr ("," expr)*] ")" -> call
     | "(" expr ")"
KIND.2: "inout" | "in" | "out" | "temp"
RANGE: ".."
ASSIGN_OP: "=" | "+=" | "*=" | "max=" | "min="
CMP_OP: "<=" | ">=" | "==" | "!=" | "<" | ">"
ADD_OP: "+" | "-"
MUL_OP: "//" | "/" | "*" | "%"
NUMBER: /\d+\.\d+([eE][+-]?\d+)?/ | /\d+[eE][+-]?\d+/ | /\d+/
NEG_NUMBER: /-(\d+\.\d+([eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+|inf\b)/
INT: /\d+/
NAME: /[A-Za-z_][A-Za-z_0-9]*/
COMMENT: /#[^\n]*/
_NL: (/\r?\n[\t ]*/ | COMMENT)+
%ignore /[\t ]+/
%ignore /\\[\t ]*\r?\n/
%declare _INDENT _DEDENT
"""

KEYWORDS = {"kernel", "for", "in", "local", "prefetch", "out", "inout", "temp", "inf"}


class _Indenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


_PARSER = Lark(GRAMMAR, parser="lalr", postlex=_Indenter(), propagate_positions=True,
               maybe_placeholders=True)
# lark's Indenter keeps its indentation state on the instance: one parse at a time
# (the web app parses in several threads at once)
_PARSE_LOCK = threading.Lock()


def _name(tok: Token) -> str:
    """A declared name (kernel, size, array, local, iterator): keywords are refused."""
    if str(tok) in KEYWORDS:
        raise DojoError(f"'{tok}' is a keyword and cannot be used as a name", tok.line, tok.column)
    if str(tok) in ir.FUNCTIONS:
        raise DojoError(f"'{tok}' is a built-in function and cannot be used as a name",
                        tok.line, tok.column)
    return str(tok)


def _loc(tok_or_meta) -> ir.Loc:
    line = getattr(tok_or_meta, "line", None) or 1
    col = getattr(tok_or_meta, "column", None) or 1
    return ir.Loc(line, col)


MAX_INT = (1 << 63) - 1          # integer literals and sizes fit the generated code's int64
MAX_DEPTH = 200                  # nesting of expressions and blocks (each level costs recursion)


def _number(tok, negative: bool = False, where=None):
    """The value of a number literal; a DojoError at ``where`` (default: the token) when an
    integer does not fit int64 or a real is not a finite double."""
    text = str(tok)
    where = where if where is not None else tok
    line, col = getattr(where, "line", 1) or 1, getattr(where, "column", 1) or 1
    if any(c in text for c in ".eE"):
        value = float(text)
        if not math.isfinite(value):
            raise DojoError(f"number {_short(text)} is out of range for a floating-point literal",
                            line, col)
    else:
        if len(text.lstrip("0")) > 19 or int(text) > MAX_INT + negative:
            bound = "at least -2**63" if negative else "at most 2**63 - 1"
            raise DojoError(f"integer {'-' * negative}{_short(text)} is out of range ({bound})",
                            line, col)
        value = int(text)
    return -value if negative else value


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def _depth_error(tree) -> DojoError | None:
    """A DojoError at the first node nested deeper than MAX_DEPTH, or None (iterative)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > MAX_DEPTH:
            meta = node.meta
            return DojoError(f"nested too deeply (more than {MAX_DEPTH} levels of expressions "
                             "and blocks); split the expression with a local",
                             getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)
        stack.extend((child, depth + 1) for child in node.children)
    return None


@v_args(meta=True)
class _Build(Transformer):
    """Parse tree -> IR nodes (bare names are resolved later by _resolve)."""

    def start(self, meta, children):
        header, *rest = children
        name, sizes, loc = header
        decls = tuple(c for c in rest if isinstance(c, ir.ArrayDecl))
        body = tuple(c for c in rest if not isinstance(c, ir.ArrayDecl))
        return ir.Program(name, sizes, decls, body, (), loc)

    def header(self, meta, children):
        name, *sizes = children
        return _name(name), tuple(s for s in sizes if s is not None), _loc(name)

    def size(self, meta, children):
        name, value = children
        return (_name(name), _number(value))

    def decl(self, meta, children):
        kind, name, (dtype, dims) = children
        return ir.ArrayDecl(str(kind), _name(name), dtype, dims, _loc(kind))

    def type(self, meta, children):
        dtype, *dims = children
        if dtype not in ir.DTYPES:
            raise DojoError(f"unknown dtype '{dtype}' (expected one of {', '.join(ir.DTYPES)})",
                            dtype.line, dtype.column)
        return str(dtype), tuple(d for d in dims if d is not None)

    def loop(self, meta, children):
        it, lo, _range, hi, *rest = children
        annots = tuple(c for c in rest if isinstance(c, str) and not isinstance(c, Token))
        body = tuple(c for c in rest if not isinstance(c, str))
        return ir.Loop(_name(it), lo, hi, annots, body, _loc(meta))

    def annotation(self, meta, children):
        text = ".".join(str(c) for c in children)
        if text not in ir.ANNOTATIONS:
            raise DojoError(f"unknown loop annotation '{text}' (expected one of "
                            f"{', '.join(ir.ANNOTATIONS)})", meta.line, meta.column)
        return text

    def local(self, meta, children):
        name, (dtype, dims), space = children
        if space is not None and space not in ir.MEMORY_SPACES:
            raise DojoError(f"unknown memory space '{space}' (expected one of "
                            f"{', '.join(ir.MEMORY_SPACES)})", space.line, space.column)
        return ir.Local(_name(name), dtype, dims, None if space is None else str(space), _loc(meta))

    def prefetch(self, meta, children):
        name, *ranges = children
        return ir.Prefetch(str(name), tuple(ranges), _loc(meta))

    def prange(self, meta, children):
        lo, _range, hi = children
        return (lo, ir.BinOp("+", lo, ir.Const(1)) if hi is None else hi)

    def assign(self, meta, children):
        target, op, value = children
        return ir.Assign(target, str(op), value, _loc(meta))

    def target(self, meta, children):
        name, *indices = children
        return ir.Access(str(name), tuple(i for i in indices if i is not None), _loc(name))

    def compare(self, meta, children):
        lhs, op, rhs = children
        return ir.BinOp(str(op), lhs, rhs, _loc(meta))

    def binop(self, meta, children):
        lhs, op, rhs = children
        return ir.BinOp(str(op), lhs, rhs, _loc(op))

    def negative_number(self, meta, children):
        tok = children[0]
        value = float("-inf") if tok == "-inf" else _number(tok[1:], negative=True, where=tok)
        return ir.Const(value, _loc(tok))

    def neg(self, meta, children):
        return ir.Neg(children[0], _loc(meta))

    def number(self, meta, children):
        return ir.Const(_number(children[0]), _loc(children[0]))

    def name(self, meta, children):
        tok = children[0]
        if tok == "inf":
            return ir.Const(float("inf"), _loc(tok))
        return ir.Var(str(tok), _loc(tok))

    def access(self, meta, children):
        name, *indices = children
        return ir.Access(str(name), tuple(indices), _loc(name))

    def call(self, meta, children):
        name, *args = children
        args = tuple(a for a in args if a is not None)
        if name not in ir.FUNCTIONS:
            raise DojoError(f"unknown function '{name}' (expected one of "
                            f"{', '.join(ir.FUNCTIONS)})", name.line, name.column)
        want = ir.FUNCTIONS[str(name)]
        if len(args) != want:
            raise DojoError(f"{name}() takes {want} argument{'s' if want != 1 else ''}, "
                            f"got {len(args)}", name.line, name.column)
        return ir.Call(str(name), args, _loc(name))


def _resolve(program: ir.Program) -> ir.Program:
    """Turn bare names of scalar arrays and scalar locals in scope into Access(name, ())."""
    global_scalars = {d.name for d in program.arrays if not d.dims}

    def fix_expr(expr, scalars):
        def fn(node):
            if isinstance(node, ir.Var) and node.name in scalars:
                return ir.Access(node.name, (), node.loc)
            return node
        return ir.map_expr(expr, fn)

    def fix_body(body, scalars):
        scalars = set(scalars)
        out = []
        for stmt in body:
            if isinstance(stmt, ir.Local):
                if stmt.dims:
                    scalars.discard(stmt.name)
                else:
                    scalars.add(stmt.name)
                out.append(stmt)
            elif isinstance(stmt, ir.Loop):
                out.append(ir.Loop(stmt.iterator, fix_expr(stmt.lo, scalars),
                                   fix_expr(stmt.hi, scalars), stmt.annotations,
                                   fix_body(stmt.body, scalars), stmt.loc))
            elif isinstance(stmt, ir.Prefetch):
                out.append(ir.Prefetch(stmt.array, tuple(
                    (fix_expr(lo, scalars), fix_expr(hi, scalars)) for lo, hi in stmt.ranges),
                    stmt.loc))
            else:
                tgt = stmt.target
                tgt = ir.Access(tgt.array, tuple(fix_expr(i, scalars) for i in tgt.indices), tgt.loc)
                out.append(ir.Assign(tgt, stmt.op, fix_expr(stmt.value, scalars), stmt.loc))
        return tuple(out)

    body = fix_body(program.body, global_scalars)
    return ir.Program(program.name, program.sizes, program.arrays, body, program.doc, program.loc)


def _leading_doc(text: str) -> tuple:
    doc = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if doc:
                continue
            continue
        if not stripped.startswith("#"):
            break
        doc.append(stripped[1:].strip())
    return tuple(doc)


def parse(text: str, filename: str = "<input>") -> ir.Program:
    """Parse Dojo IR text. Guarantees: returns a Program whose nodes carry source
    locations, or raises DojoError located at the offending line and column, never
    another exception: out-of-range numbers and nesting deeper than MAX_DEPTH (which
    would exhaust the recursion of later passes) are located refusals too."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        with _PARSE_LOCK:
            tree = _PARSER.parse(text)
        too_deep = _depth_error(tree)
        if too_deep is not None:
            raise too_deep
        program = _Build().transform(tree)
        program = _resolve(program)
    except UnexpectedCharacters as exc:
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else "?"
        raise DojoError(f"syntax error: unexpected character {ch!r}", exc.line, exc.column,
                        filename) from None
    except UnexpectedToken as exc:
        tok = exc.token
        if tok.type == "$END":
            raise DojoError(f"syntax error: unexpected end of file{expected(exc)}",
                            max(1, text.count("\n")), 1, filename) from None
        if tok.type in ("NAME", "KIND") and str(tok) in KEYWORDS and "NAME" in (exc.expected or ()):
            raise DojoError(f"syntax error: '{tok}' is a keyword and cannot be used as a name",
                            tok.line, tok.column, filename) from None
        line = tok.line if tok.line is not None else exc.line
        col = tok.column if tok.column is not None else exc.column
        if tok.type == "_INDENT":   # lark places it on the newline that precedes the line
            line, col = first_code_after(text, line or 1)
            raise DojoError("syntax error: unexpected indentation", line, col, filename) from None
        raise DojoError(f"syntax error: unexpected {describe(tok)}{expected(exc)}",
                        line or 1, col or 1, filename) from None
    except UnexpectedEOF as exc:
        raise DojoError("syntax error: unexpected end of file", max(1, text.count("\n")), 1,
                        filename) from None
    except DedentError as exc:
        line = dedent_line(text)
        raise DojoError("syntax error: this line's indentation matches no enclosing block",
                        line, 1, filename) from None
    except UnexpectedInput as exc:  # any other parse failure
        raise DojoError(f"syntax error: {exc.__class__.__name__}", getattr(exc, "line", 1) or 1,
                        getattr(exc, "column", 1) or 1, filename) from None
    except DojoError as exc:
        raise exc.located(filename) from None
    except VisitError as exc:  # lark wraps transformer errors
        inner = exc.orig_exc
        if isinstance(inner, DojoError):
            raise inner.located(filename) from None
        meta = getattr(exc.obj, "meta", exc.obj)
        reason = "nested too deeply" if isinstance(inner, RecursionError) else str(inner)[:200]
        raise DojoError(f"cannot read this {exc.rule or 'text'}: {reason}",
                        getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1,
                        filename) from None
    except RecursionError:
        raise DojoError("nested too deeply", 1, 1, filename) from None
    return ir.Program(program.name, program.sizes, program.arrays, program.body,
                      _leading_doc(text), program.loc)
