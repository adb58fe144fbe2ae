"""The code views: the assembly tab (dojo_core/asm.py, webapp/histories/code.py, the
/s/ID/asm partial), the IR <-> C line links, statement ids in the IR gutter, and the diff
views' full lines, folded unchanged runs and changes marked within lines
(webapp/histories/diffs.py)."""
from __future__ import annotations

import re
import shutil

import pytest
from django.test import Client

from dojo_core import asm as asm_mod
from dojo_core.asm import assembly, parse_listing
from dojo_core.compile import CompileError
from dojo_core.printer import line_refs, print_program
from webapp.histories import code, services
from webapp.histories.diffs import changed_ranges, diff

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path / "cache"))


def session_with(steps=(), kernel="matmul", sizes=None):
    actor = services.Actor(session_key="code-views")
    session, token = services.create_session(actor, kernel=kernel, sizes=sizes)
    owner = services.Actor(token=token)
    parent = 0
    for text in steps:
        step, _ = services.add_step(session, owner, parent, text)
        parent = step.index
    return session


def rows(html, cls):
    """(attributes, inner html) of each <div class="cls ..."> row."""
    return re.findall(rf'<div class="{cls}( [^"]*)?"([^>]*)>(.*?)</div>', html)


# ============================================================================ listings

LISTING = """\t.file\t"kernel.c"
\t.text
.Ltext0:
\t.file 0 "/tmp/x" "kernel.c"
\t.p2align 4
\t.globl\tdojo_kernel
\t.type\tdojo_kernel, @function
dojo_kernel:
.LFB0:
\t.file 1 "kernel.c"
\t.loc 1 7 3 view -0
\t.cfi_startproc
\tmovl\t$0, %eax
.L3:
\t.loc 1 8 5 is_stmt 1
\tvaddps\t(%rdi,%rax), %ymm0, %ymm0
\t.file 2 "/usr/lib/gcc/x86_64-linux-gnu/12/include/avxintrin.h"
\t.loc 2 900 1
\tvmovups\t%ymm0, (%rsi)
\tjne\t.L3
\t.loc 1 9 1
\tret
\t.cfi_endproc
\t.section\t.rodata.cst32,"aM",@progbits,32
.LC0:
\t.long\t1065353216
\t.section\t.debug_info,"",@progbits
.Ldebug_info0:
\t.long\t0x1b3
"""


def test_listing_keeps_code_labels_and_instructions_with_their_source_lines():
    lines, truncated = parse_listing(LISTING)
    assert not truncated
    assert [(a.text.strip(), a.c_line, a.label) for a in lines] == [
        ("dojo_kernel:", None, True),
        ("movl    $0, %eax", 7, False),
        (".L3:", None, True),
        ("vaddps  (%rdi,%rax), %ymm0, %ymm0", 8, False),
        ("vmovups %ymm0, (%rsi)", None, False),        # from a header: no line of ours
        ("jne     .L3", None, False),
        ("ret", 9, False),
    ]


@pytest.mark.skipif(not HAS_CC, reason="no C compiler")
def test_assembly_is_cached_on_disk_and_in_the_process(monkeypatch, tmp_path):
    source = "int dojo_kernel(int *restrict a)\n{\n  return a[0] + 1;\n}\n"
    calls = []
    real = asm_mod._compile
    monkeypatch.setattr(asm_mod, "_compile", lambda *a: calls.append(1) or real(*a))
    first = assembly(source, ("-O2",))
    assert calls == [1]
    assert any(a.c_line == 3 and not a.label for a in first.lines)
    assert first.flags[-3:] == ("-fPIC", "-g", "-S") and "kernel.c" in first.command
    again = assembly(source, ("-O2",))
    from_disk = assembly(source, ("-O2",), timeout=59)       # not in the process cache
    assert calls == [1] and again.lines == first.lines == from_disk.lines
    assert list((tmp_path / "cache").glob("*.asm.json"))


def test_a_missing_compiler_is_a_compile_error():
    with pytest.raises(CompileError, match="no C compiler"):
        assembly("int x;\n", (), cc="no-such-compiler-here")


@pytest.mark.skipif(not HAS_CC, reason="no C compiler")
def test_a_refused_source_is_a_short_compile_error():
    with pytest.raises(CompileError, match="failed"):
        assembly("this is not C\n", ())


# ============================================================================ the assembly tab

@pytest.mark.skipif(not HAS_CC, reason="no C compiler")
def test_asm_partial_colour_matches_c_and_assembly_and_links_c_to_ir():
    session = session_with(["split i by 32", "parallelize i0"], sizes={"N": 64, "M": 64, "K": 64})
    r = Client().get(f"/s/{session.id}/asm?step=2", **HX)
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="c-lines"' in html and 'id="asm-lines"' in html and "-g -S kernel.c" in html
    c_rows = {}
    for extra_cls, attrs, _ in rows(html, "cl"):
        no = int(re.search(r'data-c="(\d+)"', attrs).group(1))
        colour = re.search(r"hc(\d)", extra_cls or "")
        ir_line = re.search(r'data-ir="(\d+)"', attrs)
        c_rows[no] = (colour and colour.group(1), ir_line and int(ir_line.group(1)))
    asm_rows = [(re.search(r"hc(\d)", e or ""), re.search(r'data-c="(\d+)"', a)) for e, a, _ in rows(html, "al")]
    coloured = [(m.group(1), int(c.group(1))) for m, c in asm_rows if m and c]
    assert len(coloured) > 10
    for colour, c_line in coloured:                 # an instruction has its C line's colour
        assert c_rows[c_line][0] == colour
    used = sorted({c for _, c in coloured})
    for a, b in zip(used, used[1:]):                # neighbouring C lines differ in colour
        assert c_rows[a][0] != c_rows[b][0]
    program = services.program_at(session, 2)
    refs = line_refs(program)
    ir_text = print_program(program).splitlines()
    linked = {ir for _, ir in c_rows.values() if ir}
    assert linked <= set(refs)
    update = next(n for n, line in enumerate(ir_text, 1) if "+=" in line)
    assert update in linked                         # the update statement has its C lines


def test_asm_partial_refuses_bad_steps():
    session = session_with()
    c = Client()
    r = c.get(f"/s/{session.id}/asm?step=abc", **HX)
    assert r.status_code == 400 and b"step must be a step index" in r.content
    assert c.get(f"/s/{session.id}/asm", **HX).status_code == 400
    assert c.get(f"/s/{session.id}/asm?step=-1", **HX).status_code == 400
    assert c.get(f"/s/{session.id}/asm?step=9", **HX).status_code == 404
    assert c.get("/s/nosuchsession/asm?step=0", **HX).status_code == 404


def test_a_missing_compiler_is_a_message_in_the_tab(monkeypatch):
    monkeypatch.setenv("DOJO_CC", "no-such-compiler-here")
    session = session_with(["split j by 8"])
    r = Client().get(f"/s/{session.id}/asm?step=1", **HX)
    assert r.status_code == 200
    html = r.content.decode()
    assert 'class="diff-note asm-error"' in html
    assert "No assembly: no C compiler: &#x27;no-such-compiler-here&#x27; is not on PATH" in html
    assert "Traceback" not in html


def test_the_assembly_tab_loads_lazily_and_keeps_the_tab_after_apply():
    session = session_with(["split i by 32"])
    c = Client()
    html = c.get(f"/s/{session.id}/diff?b=1&code=asm", **HX).content.decode()
    assert 'data-code="asm"' in html and "Step 1: C and assembly" in html
    assert f'hx-get="/s/{session.id}/asm?step=1" hx-trigger="load"' in html
    assert 'id="mode-split"' not in html                 # no diff modes for one step's code
    page = c.get(f"/s/{session.id}/?step=1").content.decode()
    assert '<a class="tab" data-code="asm"' in page and ">Assembly</a>" in page
    root = c.get(f"/s/{session.id}/diff?b=0&code=asm", **HX).content.decode()
    assert f"/s/{session.id}/asm?step=0" in root       # the root has assembly too


def test_c_lines_carry_their_ir_line():
    session = session_with(["split i by 32"])
    mapped, why = code.c_with_ir(services.program_at(session, 1))
    assert why is None
    html = Client().get(f"/s/{session.id}/diff?a=0&b=1&code=c", **HX).content.decode()
    cells = re.findall(r'<td class="no">(\d+)</td><td class="b" data-ir="(\d+)">', html)
    assert cells
    for c_no, ir_no in cells:
        assert mapped.ir_lines[int(c_no) - 1] == int(ir_no)


# ============================================================================ IR gutter

def test_statement_ids_are_in_the_ir_gutter():
    session = session_with(["fission j after s0"])
    html = Client().get(f"/s/{session.id}/?step=1").content.decode()
    assert '<span class="sref">s0</span>' in html and '<span class="sref">s1</span>' in html
    assert re.search(r'data-ref="s1"[^>]*><span class="no">\d+</span><span class="sref">s1</span>', html)
    assert '<span class="sref">i</span>' not in html         # loops are named by their header


# ============================================================================ diffs

LONG = "x" * 300


def test_diff_rows_show_whole_lines_and_fold_long_unchanged_runs():
    a = "".join(f"line {k}\n" for k in range(30)) + f"A[i] = {LONG} + 1\n"
    b = "".join(f"line {k}\n" for k in range(30)) + f"A[i] = {LONG} + 2\n"
    for mode in ("split", "unified"):
        found = diff(a, b, "dojo", mode)
        assert (found.added, found.removed) == (1, 1)
        skips = [r for r in found.rows if r["kind"] == "skip"]
        assert [s["count"] for s in skips] == [27]
        folded = [r for r in found.rows if r.get("fold") == skips[0]["id"]]
        assert len(folded) == 27                            # every line is there, folded
        text = "".join(r.get("b_html", r.get("html", "")) for r in found.rows)
        assert LONG in text and "…" not in text


def test_changes_within_a_line_are_marked():
    a, b = "  C[i, j] = A[i, k] * 2\n", "  C[i, j] = A[i0, k] * 2\n"
    (row,) = diff(a, b, "dojo", "split").rows
    assert row["kind"] == "change"
    assert '<mark class="ch"><span class="n">i</span></mark>' in row["a_html"]
    assert '<mark class="ch"><span class="n">i0</span></mark>' in row["b_html"]
    assert row["b_html"].count("<mark") == 1
    assert changed_ranges("for i in 0..N:", "totally different words here") == ((), ())


def test_diff_partial_has_folds_marks_and_no_ellipsis():
    session = session_with(["split i by 32", "parallelize i0"])
    c = Client()
    html = c.get(f"/s/{session.id}/diff?a=1&b=2&code=c", **HX).content.decode()
    assert '<button type="button" class="link unfold" data-fold="1"' in html
    assert re.search(r'<tr class="same folded" data-fold="1" hidden>', html)
    assert "…" not in html
    for mode in ("split", "unified"):
        html = c.get(f"/s/{session.id}/diff?a=0&b=1&code=ir&diff={mode}", **HX).content.decode()
        assert '<mark class="ch"><span class="nv">i0</span></mark>' in html, mode
