"""The Pygments lexer for the Dojo IR (dojo_core/highlight.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation

from dojo_core import kernels
from dojo_core.highlight import DojoLexer, highlight_lines

SAMPLE = """# a doc comment
kernel k(N = 64, M = 8)
in    A: f32[N, M]
inout B: f64[N]
temp  T: f32
out   C: f32[N, M]

for i in 0..N parallel:
  local acc: f32[4, 2] in register
  for j in 0..min(M, 2*i + 1) vector gpu.thread.x:
    acc[0, 0] = 0.5e-3 + inf
    C[i, j] max= exp(A[i, j]) * -1.25 // 2  # trailing
    B[i] += select(A[i, j] >= 0, 1, 2)
"""


def tokens(text):
    return [(t, v) for t, v in DojoLexer().get_tokens(text) if v.strip()]


def kinds(text, value):
    return [t for t, v in tokens(text) if v == value]


def test_round_trip_of_every_library_kernel():
    for name in kernels.list_kernels():
        text = kernels.kernel_path(name).read_text()
        toks = list(DojoLexer().get_tokens(text))
        assert "".join(v for _, v in toks) == text, name
        assert not [v for t, v in toks if t in Error], name


def test_round_trip_keeps_leading_and_trailing_newlines():
    for text in ("", "\n", "\n\nkernel k(N = 1)\n\n\n", "x = 1", "  \t\n  "):
        assert "".join(v for _, v in DojoLexer().get_tokens(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("kernelforinlocal :[],.()=+-*/%<>#\n\t 0123456789abcxyz_é$")),
               max_size=80))
def test_round_trip_of_arbitrary_text(text):
    assert "".join(v for _, v in DojoLexer().get_tokens(text)) == text


def test_keywords():
    toks = tokens(SAMPLE)
    assert (Keyword, "kernel") in toks and (Keyword, "for") in toks and (Keyword, "local") in toks
    assert kinds(SAMPLE, "in")[:1] == [Keyword.Declaration]           # header `in A:`
    assert Keyword in kinds(SAMPLE, "in")                              # `for i in`
    assert kinds(SAMPLE, "inout") == [Keyword.Declaration]
    assert kinds(SAMPLE, "temp") == [Keyword.Declaration]
    assert kinds(SAMPLE, "f32")[0] == Keyword.Type and kinds(SAMPLE, "f64") == [Keyword.Type]
    assert kinds(SAMPLE, "register") == [Keyword.Pseudo]


def test_names():
    assert kinds(SAMPLE, "k") == [Name.Function]
    assert kinds(SAMPLE, "N")[0] == Name.Constant                     # a size in the header
    assert kinds(SAMPLE, "i")[0] == Name.Variable                     # the iterator after `for`
    assert kinds(SAMPLE, "A")[0] == Name.Variable                     # a declared array
    assert kinds(SAMPLE, "acc")[0] == Name.Variable
    assert Name.Builtin in kinds(SAMPLE, "exp") and Name.Builtin in kinds(SAMPLE, "select")
    assert kinds(SAMPLE, "min") == [Name.Builtin]


def test_numbers():
    assert kinds(SAMPLE, "64") == [Number.Integer]
    assert kinds(SAMPLE, "0.5e-3") == [Number.Float]
    assert kinds(SAMPLE, "1.25") == [Number.Float]
    assert kinds(SAMPLE, "inf") == [Number.Float]


def test_annotations():
    assert kinds(SAMPLE, "parallel") == [Name.Decorator]
    assert kinds(SAMPLE, "vector") == [Name.Decorator]
    assert kinds(SAMPLE, "gpu.thread.x") == [Name.Decorator]


def test_operators_punctuation_comments():
    assert kinds(SAMPLE, "..") == [Operator, Operator]
    assert kinds(SAMPLE, "max=") == [Operator]
    assert kinds(SAMPLE, "+=") == [Operator]
    assert kinds(SAMPLE, "//") == [Operator]
    assert kinds(SAMPLE, ">=") == [Operator]
    assert Punctuation in kinds(SAMPLE, "[")
    assert kinds(SAMPLE, "# a doc comment") == [Comment.Single]
    assert kinds(SAMPLE, "# trailing") == [Comment.Single]


def test_unknown_characters_are_errors_not_exceptions():
    assert (Error, "$") in tokens("x = $\n")


@pytest.mark.parametrize("text", [SAMPLE, "x\n\ny", "only one line"])
def test_highlight_lines_one_fragment_per_line(text):
    lines = highlight_lines(text)
    assert len(lines) == len(text.splitlines())
    for html in lines:
        assert html.count("<span") == html.count("</span>")
        assert "\n" not in html


def test_highlight_lines_escapes_html():
    (line,) = highlight_lines("# <script>alert(1)</script>")
    assert "<script>" not in line and "&lt;script&gt;" in line


def test_registered_for_dojo_files():
    assert DojoLexer.filenames == ["*.dojo"] and "dojo" in DojoLexer.aliases


def test_line_refs_without_parsing_match_the_parser():
    """engine.program_line_refs (no parse) agrees with engine.line_refs (parse) on every
    library kernel and on random legal walks from them."""
    from dojo_core.printer import print_program
    from dojo_core.walks import random_walk
    from webapp.histories import engine
    from dojo_core.transforms import apply_step
    for name in kernels.list_kernels():
        program = kernels.load_kernel(name)
        texts, _ = random_walk(program, 6, seed=len(name))
        states = [program]
        for text in texts:
            states.append(apply_step(states[-1], text))
        for state in states:
            assert engine.program_line_refs(state) == engine.line_refs(print_program(state)), (name, texts)
