"""Reading kernel and steps files (dojo_core.source, dojo_core.steps)."""
from __future__ import annotations

import pytest

from dojo_core import ir, load_file
from dojo_core import transforms
from dojo_core.errors import CheckErrors, DojoError
from dojo_core.source import MAX_BYTES, read_text
from dojo_core.steps import parse_steps, read_steps, replay

from kernels_text import VADD


def refusal(path, **kwargs) -> str:
    with pytest.raises(DojoError) as info:
        read_text(path, **kwargs)
    return str(info.value)


def test_read_text_refusals(tmp_path):
    p = tmp_path / "k.dojo"
    assert refusal(p) == f"{p}:1:1: no such file"
    assert refusal(tmp_path) == f"{tmp_path}:1:1: is a directory"
    p.write_bytes(b"")
    assert refusal(p) == f"{p}:1:1: empty file"
    p.write_bytes(b" \n\t\n")
    assert refusal(p) == f"{p}:1:1: empty file"
    assert read_text(p, allow_empty=True) == " \n\t\n"
    p.write_bytes(b"kernel\nab\x00")
    assert refusal(p) == f"{p}:2:3: not a text file"
    p.write_bytes(b"\xc3\x28")
    assert refusal(p) == f"{p}:1:1: not a text file"
    p.write_bytes(b"#" * (MAX_BYTES + 1))
    assert refusal(p) == f"{p}:1:1: file too large ({MAX_BYTES + 1} bytes, limit 1048576)"


def test_read_text_exactly_at_limit_and_normalised(tmp_path):
    p = tmp_path / "k.dojo"
    p.write_bytes(b"#" * MAX_BYTES)
    assert len(read_text(p)) == MAX_BYTES
    p.write_bytes(b"\xef\xbb\xbfkernel k()\r\nin A: f32\r")
    assert read_text(p) == "kernel k()\nin A: f32\n"


def test_load_file_valid_and_sizes(tmp_path):
    p = tmp_path / "k.dojo"
    p.write_text(VADD)
    program = load_file(p)
    assert isinstance(program, ir.Program)
    assert program.name == "vadd" and program.size_values == {"N": 16}
    assert load_file(p, {"N": 5}).size_values == {"N": 5}
    with pytest.raises(DojoError) as info:
        load_file(p, {"Q": 5})
    assert str(info.value).startswith(f"{p}:") and "unknown size 'Q'" in str(info.value)


def test_load_file_errors_are_located_in_the_file(tmp_path):
    p = tmp_path / "bad.dojo"
    p.write_text(VADD.replace("A[i] + B[i]", "D[i] + E[i]"))
    with pytest.raises(DojoError) as info:
        load_file(p)
    errors = info.value.errors if isinstance(info.value, CheckErrors) else [info.value]
    assert len(errors) >= 1
    for e in errors:
        assert e.filename == str(p) and e.line == 7


def test_load_file_syntax_error(tmp_path):
    p = tmp_path / "bad.dojo"
    p.write_text("kernel k(N = 4)\nin A: f32[N]\n\nfor i in 0..N\n")
    with pytest.raises(DojoError) as info:
        load_file(p)
    assert info.value.filename == str(p)


# --------------------------------------------------------------------------- steps

def test_parse_steps_comments_and_blanks():
    text = "# header\n\nsplit i by 32   # tile\n   interchange   j  k\n#\n"
    assert parse_steps(text) == [(3, "split i by 32"), (4, "interchange j k")]
    assert parse_steps("") == []


def test_read_steps_file(tmp_path):
    p = tmp_path / "s.steps"
    p.write_text("")
    assert read_steps(p) == []
    p.write_text("vectorize i\n")
    assert read_steps(p) == [(1, "vectorize i")]
    with pytest.raises(DojoError) as info:
        read_steps(tmp_path / "none.steps")
    assert str(info.value).endswith("none.steps:1:1: no such file")


def tiny_program() -> ir.Program:
    body = (ir.Loop("i", ir.Const(0), ir.Var("N"), (),
                    (ir.Assign(ir.Access("C", (ir.Var("i"),)), "=", ir.Access("A", (ir.Var("i"),))),)),)
    arrays = (ir.ArrayDecl("in", "A", "f32", (ir.Var("N"),)), ir.ArrayDecl("out", "C", "f32", (ir.Var("N"),)))
    return ir.Program("copy", (("N", 8),), arrays, body)


class FakeMark:
    """A stand-in transformation: `mark L` adds the `unroll` annotation to loop L."""

    def enumerate(self, program):
        return [f"mark {loop.iterator}" for loop in ir.loops(program) if "unroll" not in loop.annotations]

    def apply_text(self, program, text):
        name = text.split()[1]
        loop = program.body[0]
        if loop.iterator != name:
            raise transforms.NotApplicable(f"there is no loop '{name}'")
        if "unroll" in loop.annotations:
            raise transforms.NotApplicable(f"loop '{name}' is already marked")
        new = ir.Loop(loop.iterator, loop.lo, loop.hi, loop.annotations + ("unroll",), loop.body)
        return ir.Program(program.name, program.sizes, program.arrays, (new,), program.doc)


def test_replay_applies_steps_in_order(monkeypatch):
    monkeypatch.setitem(transforms.REGISTRY, "mark", FakeMark())
    program = tiny_program()
    assert replay(program, [], "s.steps") == program
    done = replay(program, [(2, "mark i")], "s.steps")
    assert done.body[0].annotations == ("unroll",)
    assert program.body[0].annotations == ()          # the input is untouched
    assert replay(program, ["mark i"]) == done          # bare texts are accepted


def test_replay_error_is_located_at_the_step_line(monkeypatch):
    monkeypatch.setitem(transforms.REGISTRY, "mark", FakeMark())
    with pytest.raises(DojoError) as info:
        replay(tiny_program(), [(1, "mark i"), (4, "mark i")], "s.steps")
    assert str(info.value) == "s.steps:4:1: step 'mark i': loop 'i' is already marked"
    with pytest.raises(DojoError) as info:
        replay(tiny_program(), [(7, "mark q")], "s.steps")
    assert str(info.value) == "s.steps:7:1: step 'mark q': there is no loop 'q'"


def test_replay_unknown_transformation():
    with pytest.raises(DojoError) as info:
        replay(tiny_program(), [(3, "frobnicate i")], "s.steps")
    assert str(info.value).startswith("s.steps:3:1: step 'frobnicate i': unknown transformation 'frobnicate'")


def test_steps_are_numbered_as_editors_number_lines():
    text = "# a comment with a form feed \x0c and a line separator \u2028 inside\r\nsplit i by 4\rparallelize i0\n"
    assert parse_steps(text) == [(2, "split i by 4"), (3, "parallelize i0")]
