"""The parser and the canonical printer (DESIGN.md section 3).

- golden files: tests/core/golden/printer/NAME.dojo is printed to exactly NAME.expected
  (comments, blank lines, odd spacing, parentheses dropped or kept, annotations, locals,
  scalars, constants, doc comments); the expected text is a fixed point and parses back
  to the same Program.
- properties (hypothesis): parse(print(p)) == p and print is stable for random valid
  programs (tests/strategies.py); every random expression tree round-trips.
- syntax errors are located at an exact FILE:LINE:COL for a table of malformed inputs.
- fuzz: on random text and on mutations of valid programs the parser raises DojoError
  and nothing else (and the checker, when the parse succeeds, never raises at all).

Regenerate the golden outputs (after reviewing the change!) with
pytest tests/core/test_parser_printer.py -k golden --update-goldens.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dojo_core import ir
from dojo_core.checker import check
from dojo_core.errors import DojoError
from dojo_core.parser import parse
from dojo_core.printer import print_expr, print_program

try:
    from strategies import expression_program, expressions, programs
except ImportError:  # tests/ imported as a package
    from tests.strategies import expression_program, expressions, programs

GOLDEN = Path(__file__).parent / "golden" / "printer"
GOLDEN_CASES = sorted(p.stem for p in GOLDEN.glob("*.dojo"))
KERNELS = sorted((Path(__file__).parents[2] / "dojo_core" / "kernels").glob("*.dojo"))


def fast(n: int):
    """Hypothesis settings: n examples, no per-example deadline (islpy can be slow to warm)."""
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def strict_key(node):
    """A structural key that, unlike ==, tells 1 from 1.0 and 0.0 from -0.0."""
    if isinstance(node, ir.Const):
        v = node.value
        return ("Const", type(v).__name__, repr(v) if isinstance(v, float) else v,
                math.copysign(1, v) if isinstance(v, float) else 1)
    if isinstance(node, tuple):
        return tuple(strict_key(n) for n in node)
    if hasattr(node, "__dataclass_fields__"):
        return (type(node).__name__,) + tuple(
            strict_key(getattr(node, f)) for f in node.__dataclass_fields__ if f != "loc")
    return node


def error_of(text: str, filename: str = "f.dojo") -> DojoError:
    with pytest.raises(DojoError) as info:
        parse(text, filename)
    return info.value


# ----------------------------------------------------------------------------- golden files

def test_golden_suite_is_complete():
    assert len(GOLDEN_CASES) >= 8
    for name in GOLDEN_CASES:
        assert (GOLDEN / f"{name}.expected").exists(), name


@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_golden(name, golden):
    source = (GOLDEN / f"{name}.dojo").read_text()
    program = parse(source, f"{name}.dojo")
    text = print_program(program)
    expected = golden(f"printer/{name}.expected", text)
    again = parse(expected, f"{name}.expected")
    assert again == program
    assert strict_key(again) == strict_key(program)
    assert print_program(again) == expected          # fixed point
    assert check(program, f"{name}.dojo") == []      # every golden kernel is also valid


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_library_kernels_round_trip(path):
    program = parse(path.read_text(), str(path))
    text = print_program(program)
    assert parse(text) == program
    assert print_program(parse(text)) == text


# ----------------------------------------------------------------------------- parser details

def _value(src_expr: str, decls: str = "in s: f32\nin A: f32[N]\n"):
    p = parse(f"kernel k(N = 4)\n{decls}out R: f32\n\nR = {src_expr}\n")
    return p.body[0].value


def test_negative_literals_and_unary_minus():
    C, V, Neg, B = ir.Const, ir.Var, ir.Neg, ir.BinOp
    assert _value("-1") == C(-1)
    assert _value("-(1)") == Neg(C(1))
    assert _value("- 1") == Neg(C(1))
    assert _value("-2.5") == C(-2.5)
    assert strict_key(_value("-0.0")) == strict_key(C(-0.0))
    assert _value("-inf") == C(float("-inf"))
    assert _value("inf") == C(float("inf"))
    assert _value("-(inf)") == Neg(C(float("inf")))
    assert _value("2 * -1") == B("*", C(2), C(-1))
    assert _value("2*-1") == B("*", C(2), C(-1))
    assert _value("N-1") == B("-", V("N"), C(1))          # no space: still a subtraction
    assert _value("N -1") == B("-", V("N"), C(1))
    assert _value("N - -1") == B("-", V("N"), C(-1))
    assert _value("--N") == Neg(Neg(V("N")))
    assert _value("-N * 2") == B("*", Neg(V("N")), C(2))  # unary minus binds tighter
    assert _value("-(N * 2)") == Neg(B("*", V("N"), C(2)))
    assert _value("-9223372036854775808") == C(-2**63)    # int64's least value
    for text, bound in (("-9223372036854775809", "at least -2**63"),
                        ("9223372036854775808", "at most 2**63 - 1")):
        with pytest.raises(DojoError, match=r"out of range \(" + re.escape(bound)):
            _value(text)


def test_precedence_and_associativity():
    C, V, B = ir.Const, ir.Var, ir.BinOp
    a, b, c = V("a"), V("b"), V("c")
    assert _value("a - b - c", "") == B("-", B("-", a, b), c)
    assert _value("a - (b - c)", "") == B("-", a, B("-", b, c))
    assert _value("a + b * c", "") == B("+", a, B("*", b, c))
    assert _value("a // 2 % 3", "") == B("%", B("//", a, C(2)), C(3))
    assert _value("a + 1 < b * 2", "") == B("<", B("+", a, C(1)), B("*", b, C(2)))
    assert print_expr(B("-", a, B("-", b, c))) == "a - (b - c)"
    assert print_expr(B("-", B("-", a, b), c)) == "a - b - c"
    assert print_expr(B("+", a, B("+", b, c))) == "a + (b + c)"   # the tree is kept
    assert print_expr(ir.Neg(C(1))) == "-(1)"
    assert print_expr(C(-1)) == "-1"
    assert print_expr(B("*", C(32), V("i0"))) == "32*i0"
    assert print_expr(B("*", V("i0"), C(32))) == "i0 * 32"
    assert print_expr(B("<", B("<", a, b), c)) == "(a < b) < c"


def test_names_resolve_to_scalars_iterators_and_sizes():
    src = ("kernel k(N = 4)\nin alpha: f32\nin A: f32[N]\nout B: f32[N]\n\n"
           "for i in 0..N:\n  local s: f32\n  s = alpha * N\n  B[i] = s + A[i] + i\n"
           "for j in 0..N:\n  B[j] += s\n")
    p = parse(src)
    loop1, loop2 = p.body
    assert loop1.body[1] == ir.Assign(ir.Access("s"), "=",
                                      ir.BinOp("*", ir.Access("alpha"), ir.Var("N")))
    assert loop1.body[2].value == ir.BinOp("+", ir.BinOp("+", ir.Access("s"), ir.Access("A", (ir.Var("i"),))),
                                           ir.Var("i"))
    # out of the local's block a bare 's' is a plain name (the checker refuses it)
    assert loop2.body[0].value == ir.Var("s")


def test_source_locations():
    src = ("kernel k(N = 4)\nin  A: f32[N]\nout B: f32[N]\n\n"
           "for i in 0..N:\n  B[i] = A[i] * 2\n")
    p = parse(src)
    assert p.loc == ir.Loc(1, 8)
    assert [d.loc for d in p.arrays] == [ir.Loc(2, 1), ir.Loc(3, 1)]
    loop = p.body[0]
    assert loop.loc == ir.Loc(5, 1)
    stmt = loop.body[0]
    assert stmt.loc == ir.Loc(6, 3)
    assert stmt.target.loc == ir.Loc(6, 3)
    assert stmt.value.loc == ir.Loc(6, 15)           # a binary operation is at its operator
    assert stmt.value.lhs.loc == ir.Loc(6, 10)
    assert stmt.value.rhs.loc == ir.Loc(6, 17)


def test_equality_ignores_locations_and_layout():
    a = parse("kernel k(N = 4)\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = 1\n")
    b = parse("\n\n# doc\nkernel k(N=4)\nout B:f32[N]\nfor i in 0..N :\n    B[ i ] = 1  # c\n")
    assert a.body == b.body and a.arrays == b.arrays and a.sizes == b.sizes
    assert b.doc == ("doc",)
    assert a != b                                     # the doc comment is part of the program
    assert print_program(b) == "# doc\n" + print_program(a)


def test_line_endings_tabs_and_missing_final_newline():
    lf = "kernel k(N = 4)\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = 1\n"
    assert parse(lf.replace("\n", "\r\n")) == parse(lf)
    assert parse(lf.rstrip("\n")) == parse(lf)
    assert parse(lf.replace("  B[i]", "\tB[i]")) == parse(lf)
    assert parse(lf.replace("  B[i] = 1", "  B[i] = \\\n    1")) == parse(lf)


def test_printer_layout():
    p = parse("kernel k()\nout Y: f32\n")
    assert print_program(p) == "kernel k()\nout Y: f32\n"      # no body: no blank line
    p = parse("kernel k(N = 2)\ninout Z: f32[N]\n\nZ[0] = 1\n")
    text = print_program(p)
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "\n\nZ[0] = 1\n" in text


def test_i8_round_trip():
    text = ("kernel q(M = 4, K = 8)\nin  A: i8[M, K]\nin  s: i8\nout C: i32[M]\nout D: i8[M]\n\n"
            "for i in 0..M:\n  local t: i8[K] in register\n  C[i] = 0\n  for k in 0..K:\n"
            "    t[k] = A[i, k]\n    C[i] += t[k] * A[i, k] - s\n  D[i] = C[i] + 300\n")
    program = parse(text)
    assert [d.dtype for d in program.arrays] == ["i8", "i8", "i32", "i8"]
    assert program.body[0].body[0] == ir.Local("t", "i8", (ir.Var("K"),), "register")
    printed = print_program(program)
    assert printed == text
    assert parse(printed) == program and print_program(parse(printed)) == printed
    assert check(program) == []
    assert "unknown dtype 'u8'" in str(error_of(text.replace("i8[M, K]", "u8[M, K]")))


# ----------------------------------------------------------------------------- properties

@fast(150)
@given(programs())
def test_program_round_trip(program):
    text = print_program(program)
    parsed = parse(text, "gen.dojo")
    assert parsed == program
    assert strict_key(parsed) == strict_key(program)
    assert print_program(parsed) == text


@fast(400)
@given(expressions())
def test_expression_round_trip(expr):
    text = print_expr(expr)
    parsed = parse(expression_program(text), "expr.dojo").body[0].value
    assert parsed == expr, text
    assert strict_key(parsed) == strict_key(expr), text
    assert print_expr(parsed) == text
    # the same text also survives as an index and as a call argument
    wrapped = parse(expression_program(f"A[{text}, 0, abs({text})]"), "expr.dojo").body[0].value
    assert wrapped == ir.Access("A", (expr, ir.Const(0), ir.Call("abs", (expr,))))


@fast(150)
@given(expressions(max_leaves=10), expressions(max_leaves=10), st.sampled_from(ir.BINARY_OPS))
def test_printer_parenthesises_only_as_needed(lhs, rhs, op):
    """The canonical text of BinOp(op, lhs, rhs) round-trips for any operand shapes, and
    a redundant pair of parentheses around the whole text changes nothing."""
    expr = ir.BinOp(op, lhs, rhs)
    text = print_expr(expr)
    assert parse(expression_program(text)).body[0].value == expr
    assert parse(expression_program(f"({text})")).body[0].value == expr
    assert not (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])), text


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


# ----------------------------------------------------------------------------- syntax errors

H = "kernel k(N = 4)\nin A: f32[N]\nout B: f32[N]\n\n"       # the body starts at line 5
KEYWORD = "is a keyword and cannot be used as a name"

SYNTAX_ERRORS = [
    # id, source, line, col, message fragment
    ("missing-colon-loop", H + "for i in 0..N\n  B[i] = A[i]\n", 5, 14,
     "syntax error: unexpected end of line, expected ':'"),
    ("missing-colon-decl", "kernel k(N = 4)\nin A f32[N]\n", 2, 6, "unexpected 'f32', expected ':'"),
    ("missing-colon-local", H + "local t f32\n", 5, 9, "unexpected 'f32', expected ':'"),
    ("dedent-to-no-block", H + "for i in 0..N:\n    B[i] = A[i]\n  B[i] = A[i]\n", 7, 1,
     "syntax error: this line's indentation matches no enclosing block"),
    ("loop-without-body", H + "for i in 0..N:\nB[0] = 1\n", 6, 1, "syntax error: unexpected 'B'"),
    ("unknown-char-dollar", H + "B[0] = A[0] $ 2\n", 5, 13, "syntax error: unexpected character '$'"),
    ("unknown-char-at", H + "B[0] = A[0] @ 2\n", 5, 13, "syntax error: unexpected character '@'"),
    ("unknown-char-decl", "kernel k(N = 4)\nin A: f32[N]?\n", 2, 13, "unexpected character '?'"),
    ("unknown-char-unicode", H + "B[0] = A[0] \u00d7 2\n", 5, 13, "unexpected character '\u00d7'"),
    ("eof-after-loop-header", H + "for i in 0..N:\n", 5, 1,
     "syntax error: unexpected end of file, expected an indented block"),
    ("eof-in-paren", H + "B[0] = (A[0] + 1\n", 5, 1, "syntax error: unexpected end of file"),
    ("eof-in-header", "kernel k(N = 4", 1, 1, "syntax error: unexpected end of file, expected ')'"),
    ("eof-in-expression", H + "B[0] = A[0] +", 5, 14, "syntax error: unexpected end of line"),
    ("empty-file", "", 1, 1, "syntax error: unexpected end of file, expected 'kernel'"),
    ("unclosed-bracket", H + "B[0 = 1\n", 5, 5, "syntax error: unexpected '='"),
    ("unknown-dtype", "kernel k(N = 4)\nin A: f33[N]\n", 2, 7,
     "unknown dtype 'f33' (expected one of f32, f64, f16, bf16, i32, i64, i8)"),
    ("unknown-dtype-local", H + "local t: float\n", 5, 10, "unknown dtype 'float'"),
    ("unknown-function", H + "B[0] = foo(A[0])\n", 5, 8, "unknown function 'foo' (expected one of exp,"),
    ("arity-max", H + "B[0] = max(A[0])\n", 5, 8, "max() takes 2 arguments, got 1"),
    ("arity-select", H + "B[0] = 1 + select(A[0] > 0, 1)\n", 5, 12, "select() takes 3 arguments, got 2"),
    ("arity-exp", H + "B[0] = exp(A[0], 2)\n", 5, 8, "exp() takes 1 argument, got 2"),
    ("unknown-annotation", H + "for i in 0..N fast:\n  B[i] = A[i]\n", 5, 15,
     "unknown loop annotation 'fast' (expected one of parallel, vector, unroll, gpu.block.x"),
    ("unknown-annotation-gpu", H + "for i in 0..N parallel gpu.warp.x:\n  B[i] = A[i]\n", 5, 24,
     "unknown loop annotation 'gpu.warp.x'"),
    ("unknown-memory-space", H + "local t: f32 in regs\n", 5, 17, "unknown memory space 'regs'"),
    ("keyword-iterator", H + "for in in 0..N:\n  B[0] = 1\n", 5, 5, f"'in' {KEYWORD}"),
    ("keyword-array", "kernel k(N = 4)\nin for: f32[N]\n", 2, 4, f"'for' {KEYWORD}"),
    ("keyword-local", H + "local out: f32\n", 5, 7, f"'out' {KEYWORD}"),
    ("keyword-kernel-name", "kernel local(N = 4)\n", 1, 8, f"'local' {KEYWORD}"),
    ("keyword-size", "kernel k(inf = 4)\n", 1, 10, f"'inf' {KEYWORD}"),
    ("function-as-name", "kernel k(N = 4)\nin exp: f32[N]\n", 2, 4,
     "'exp' is a built-in function and cannot be used as a name"),
    ("missing-header", "in A: f32[4]\nout B: f32[4]\n", 1, 1, "syntax error: unexpected 'in', expected 'kernel'"),
    ("missing-header-after-doc", "\n# doc\nfor i in 0..4:\n  B[i] = 1\n", 3, 1,
     "syntax error: unexpected 'for', expected 'kernel'"),
    ("unsupported-assign-op", H + "B[0] -= 1\n", 5, 6, "syntax error: unexpected '-'"),
    ("unknown-array-kind", "kernel k(N = 4)\nvar A: f32[N]\n", 2, 5, "syntax error: unexpected 'A'"),
    ("float-size", "kernel k(N = 4.5)\n", 1, 15, "syntax error: unexpected '.'"),
    ("negative-size", "kernel k(N = -4)\n", 1, 14, "syntax error: unexpected '-4', expected an integer"),
    ("chained-comparison", H + "B[0] = select(1 < 2 < 3, 1, 2)\n", 5, 21, "syntax error: unexpected '<'"),
    ("empty-index", H + "B[] = 1\n", 5, 3, "syntax error: unexpected ']'"),
    ("declaration-after-body", H + "B[0] = 1\nin C: f32[N]\n", 6, 4, "syntax error: unexpected 'C'"),
    ("two-statements-one-line", H + "B[0] = 1 B[1] = 2\n", 5, 10, "syntax error: unexpected 'B'"),
]


@pytest.mark.parametrize("source,line,col,fragment",
                         [c[1:] for c in SYNTAX_ERRORS], ids=[c[0] for c in SYNTAX_ERRORS])
def test_syntax_error_is_located(source, line, col, fragment):
    err = error_of(source, "bad.dojo")
    assert (err.line, err.col) == (line, col), str(err)
    assert fragment in err.message, str(err)
    assert str(err) == f"bad.dojo:{line}:{col}: {err.message}"
    assert "\n" not in str(err)


@pytest.mark.parametrize("source,line", [
    (H + "for i in 0..N:\n  B[i] = A[i]\n    B[i] = A[i]\n", 7),
    (H + "B[0] = A[0]\n  B[1] = A[1]\n", 6),
], ids=["in-loop", "top-level"])
def test_unexpected_indentation_is_located_on_its_line(source, line):
    err = error_of(source)
    assert "unexpected indentation" in err.message
    assert err.line == line and err.col in (1, 3, 5), str(err)


def test_unexpected_indentation_is_refused():
    err = error_of(H + "for i in 0..N:\n  B[i] = A[i]\n    B[i] = A[i]\n")
    assert err.message == "syntax error: unexpected indentation"


# ----------------------------------------------------------------------------- fuzz

_CORPUS = [p.read_text() for p in KERNELS] + [(GOLDEN / f"{n}.dojo").read_text() for n in GOLDEN_CASES]
_ALPHABET = st.sampled_from(list("abiNM01_9.e- \n\t#:[](),=+*/%<>!\\$'\"") + ["in ", "for ", "..", "//"])


def _assert_only_dojo_errors(text: str):
    try:
        program = parse(text, "fuzz.dojo")
    except DojoError as err:
        assert re.fullmatch(r"fuzz\.dojo:\d+:\d+: .+", str(err)), str(err)
        assert 1 <= err.line <= text.count("\n") + 2 and err.col >= 1, str(err)
        return
    errors = check(program, "fuzz.dojo")          # must return, never raise
    assert all(isinstance(e, DojoError) for e in errors)
    for e in errors:
        assert re.fullmatch(r"fuzz\.dojo:\d+:\d+: .+", str(e)), str(e)


@fast(300)
@given(st.text(st.characters(min_codepoint=9, max_codepoint=126), max_size=200))
def test_fuzz_printable_text(text):
    _assert_only_dojo_errors(text)


@fast(200)
@given(st.lists(_ALPHABET, max_size=40))
def test_fuzz_after_a_valid_header(pieces):
    _assert_only_dojo_errors(H + "".join(pieces))


def _mutate(data, text: str) -> str:
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["del_char", "dup_char", "ins_char", "del_line",
                                          "dup_line", "indent_line", "swap_lines"]))
        lines = text.split("\n")
        if kind.endswith("_char") and text:
            i = data.draw(st.integers(0, len(text) - 1))
            if kind == "del_char":
                text = text[:i] + text[i + 1:]
            elif kind == "dup_char":
                text = text[:i] + text[i] + text[i:]
            else:
                text = text[:i] + data.draw(_ALPHABET) + text[i:]
        elif kind.endswith("_line") or kind == "swap_lines":
            i = data.draw(st.integers(0, len(lines) - 1))
            if kind == "del_line":
                del lines[i]
            elif kind == "dup_line":
                lines.insert(i, lines[i])
            elif kind == "indent_line":
                lines[i] = data.draw(st.sampled_from([" ", "  ", "\t", "   "])) + lines[i]
            else:
                j = data.draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


@fast(300)
@given(st.data())
def test_fuzz_mutated_library_and_golden_sources(data):
    source = data.draw(st.sampled_from(_CORPUS))
    _assert_only_dojo_errors(_mutate(data, source))


@fast(150)
@given(programs(max_depth=2), st.data())
def test_fuzz_mutated_generated_programs(program, data):
    _assert_only_dojo_errors(_mutate(data, print_program(program)))
