"""The data transformations: stage, accumulate, layout, divide, inline, materialize, expand
(DESIGN.md section 4, TRANSFORMS.md pictures).

Golden before/after texts, one test per refusal reason, and equivalence on the reference
interpreter: every golden case, and sampled legal applications (alone and after splits and
interchanges) on every library kernel at its test sizes.
"""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, apply_step, explain
from dojo_core.transforms import footprint
from dojo_core.transforms.base import NotApplicable

from kernels_text import kernel_text, matmul_text, row_normalize_body, with_body
from transform_checks import walk

MINE = ("stage", "accumulate", "layout", "divide", "inline", "materialize", "expand")


def kernel(text: str):
    program = parse(text)
    assert check(program) == []
    return program


def assert_same_outputs(before, after, seed=0, context=""):
    inputs = random_inputs(before, seed)
    want = interp.run(before, inputs)
    got = interp.run(after, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5,
                                   err_msg=f"output {name} differs {context}")


def apply_all(program, steps):
    for step in steps:
        assert explain(program, step) is None, step
        program = apply_step(program, step)
    return program


def golden(before_text, steps, after_text):
    """The steps take before_text to after_text: a whole kernel text, or only the body when
    the steps leave the kernel line and declarations as they are."""
    if not after_text.startswith("kernel "):
        after_text = with_body(before_text, after_text)
    before = kernel(before_text)
    after = apply_all(before, steps)
    assert print_program(after) == after_text
    assert check(after) == []
    assert parse(after_text) == after
    assert_same_outputs(before, after)
    return after


# --------------------------------------------------------------------------- programs

TILED = kernel_text("matmul(N = 24, M = 32, K = 20)",
                    "in A: f32[N, K]; in B: f32[K, M]; inout C: f32[N, M]", """\
for j0 in 0..M // 16:
  for i in 0..N:
    for k in 0..K:
      for j1 in 0..16:
        C[i, 16*j0 + j1] += A[i, k] * B[k, 16*j0 + j1]
""")

TILED_WIDE = TILED.replace("N = 24, M = 32, K = 20", "N = 72, M = 32, K = 80")

MATMUL = matmul_text(8, 32, 12)

TAIL = kernel_text("rows(N = 100, K = 8)", "in A: f32[N, K]; out s: f32[N]", """\
for i0 in 0..(N + 31) // 32:
  for i1 in 0..min(32, N - 32*i0):
    s[32*i0 + i1] = 0
    for k in 0..K:
      s[32*i0 + i1] += A[32*i0 + i1, k]
""")

TILE_AFTER_INIT = kernel_text("mm(N = 8, M = 32, K = 12)",
                              "in A: f32[N, K]; in B: f32[K, M]; out C: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
for i0 in 0..N // 4:
  for j0 in 0..M // 16:
    for i1 in 0..4:
      for k in 0..K:
        for j1 in 0..16:
          C[4*i0 + i1, 16*j0 + j1] += A[4*i0 + i1, k] * B[k, 16*j0 + j1]
""")


# --------------------------------------------------------------------------- stage

# TILED after stage B at j0 as Bt
TILED_STAGED = """\
for j0 in 0..M // 16:
  local Bt: f32[K, 16]
  for k1 in 0..K:
    for j2 in 0..16:
      Bt[k1, j2] = B[k1, 16*j0 + j2]
  for i in 0..N:
    for k in 0..K:
      for j1 in 0..16:
        C[i, 16*j0 + j1] += A[i, k] * Bt[k, j1]
"""


def test_stage_tiled_matmul_picture():
    golden(TILED, ["stage B at j0 as Bt"], TILED_STAGED)


def test_stage_one_element_gives_a_scalar():
    golden(MATMUL, ["stage A at k as At"], """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
    for k in 0..K:
      local At: f32
      At = A[i, k]
      C[i, j] += At * B[k, j]
""")


def test_stage_row_gives_a_vector():
    after = apply_all(kernel(MATMUL), ["stage A at j as At"])
    assert "local At: f32[K]" in print_program(after)
    assert "C[i, j] += At[k] * B[k, j]" in print_program(after)


def test_stage_with_a_tail_clamps_the_copy():
    golden(TAIL, ["stage A at i0 as At"], """\
for i0 in 0..(N + 31) // 32:
  local At: f32[32, K]
  for i2 in 0..min(32, N - 32*i0):
    for k1 in 0..K:
      At[i2, k1] = A[32*i0 + i2, k1]
  for i1 in 0..min(32, N - 32*i0):
    s[32*i0 + i1] = 0
    for k in 0..K:
      s[32*i0 + i1] += At[i1, k]
""")


def test_stage_im2col_like_window_on_conv2d():
    before = load_kernel("conv2d", info("conv2d").test_sizes)
    after = apply_all(before, ["stage X at h as Xt", "layout Xt 1 2 0"])
    text = print_program(after)
    assert """\
      local Xt: f32[3, W + 2, C]
      for c1 in 0..C:
        for kh1 in 0..3:
          for w1 in 0..W + 2:
            Xt[kh1, w1, c1] = X[n, c1, h + kh1, w1]
""" in text
    assert "Y[n, f, h, w] += Xt[kh, w + kw, c] * Wt[f, c, kh, kw]" in text
    assert_same_outputs(before, after)


def test_stage_reversed_and_modular_indices():
    before = kernel(kernel_text("k(N = 64)",
                                "in A: f32[N, 4]; out B: f32[N, 4]; out s: f32[N]", """\
for i0 in 0..N // 16:
  for r in 0..64:
    B[16*i0 + r // 4, r % 4] = A[16*i0 + r // 4, r % 4]
for i in 0..N:
  s[i] = 0
  for j in 0..4:
    s[i] += A[N - 1 - i, 3 - j]
"""))
    after = apply_all(before, ["stage A at i0 as At", "stage A at i as At2"])
    text = print_program(after)
    assert """\
  local At: f32[16, 4]
  for r1 in 0..16:
    for r2 in 0..4:
      At[r1, r2] = A[16*i0 + r1, r2]
  for r in 0..64:
    B[16*i0 + r // 4, r % 4] = At[r // 4, r % 4]
""" in text                                      # islpy computes this box
    assert """\
  local At2: f32[4]
  for j1 in 0..4:
    At2[j1] = A[N - i - 1, j1]
  s[i] = 0
  for j in 0..4:
    s[i] += At2[-j + 3]
""" in text                                      # a reversed loop starts at its last index
    assert_same_outputs(before, after)


# --------------------------------------------------------------------------- accumulate

def register_tile_store(i: str, j: str) -> str:
    """The last loops of a 4 x 16 register tile accumulation: acc stored back into C."""
    return (f"    for {i} in 0..4:\n      for {j} in 0..16:\n"
            f"        C[4*i0 + {i}, 16*j0 + {j}] = acc[{i}, {j}]\n")


def test_accumulate_matmul_scalar_accumulator():
    golden(MATMUL, ["accumulate C at k as acc"], """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
    local acc: f32
    acc = C[i, j]
    for k in 0..K:
      acc += A[i, k] * B[k, j]
    C[i, j] = acc
""")


def test_accumulate_register_tile_after_splits_skips_the_load():
    golden(MATMUL, ["split i by 4", "split j by 16", "interchange i1 j0",
                    "accumulate C at i1 as acc in register"], """\
for i0 in 0..N // 4:
  for j0 in 0..M // 16:
    local acc: f32[4, 16] in register
    for i1 in 0..4:
      for j1 in 0..16:
        acc[i1, j1] = 0
        for k in 0..K:
          acc[i1, j1] += A[4*i0 + i1, k] * B[k, 16*j0 + j1]
""" + register_tile_store("i2", "j2"))


def test_accumulate_register_tile_loads_what_an_earlier_nest_wrote():
    golden(TILE_AFTER_INIT, ["accumulate C at i1 as acc in register"], """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
for i0 in 0..N // 4:
  for j0 in 0..M // 16:
    local acc: f32[4, 16] in register
    for i2 in 0..4:
      for j2 in 0..16:
        acc[i2, j2] = C[4*i0 + i2, 16*j0 + j2]
    for i1 in 0..4:
      for k in 0..K:
        for j1 in 0..16:
          acc[i1, j1] += A[4*i0 + i1, k] * B[k, 16*j0 + j1]
""" + register_tile_store("i3", "j3"))


def tile_after_adjacent_init(init_cols: int = 16, literal: str = "0") -> str:
    """A 4 x 16 tile of C += A @ B whose elements a nest just before it sets to a literal
    (only its first init_cols columns when init_cols < 16; the others a nest before)."""
    return kernel_text("mm(N = 8, M = 32, K = 12)",
                       "in A: f32[N, K]; in B: f32[K, M]; out C: f32[N, M]", f"""\
for i5 in 0..N:
  for j5 in 0..M:
    C[i5, j5] = 0
for i0 in 0..N // 4:
  for j0 in 0..M // 16:
    for i in 0..4:
      for j in 0..{init_cols}:
        C[4*i0 + i, 16*j0 + j] = {literal}
    for i1 in 0..4:
      for k in 0..K:
        for j1 in 0..16:
          C[4*i0 + i1, 16*j0 + j1] += A[4*i0 + i1, k] * B[k, 16*j0 + j1]
""")


def test_accumulate_starts_at_the_literal_of_the_nest_just_before():
    golden(tile_after_adjacent_init(literal="1.5"), ["accumulate C at i1 as acc in register"],
           """\
for i5 in 0..N:
  for j5 in 0..M:
    C[i5, j5] = 0
for i0 in 0..N // 4:
  for j0 in 0..M // 16:
    local acc: f32[4, 16] in register
    for i2 in 0..4:
      for j2 in 0..16:
        acc[i2, j2] = 1.5
    for i1 in 0..4:
      for k in 0..K:
        for j1 in 0..16:
          acc[i1, j1] += A[4*i0 + i1, k] * B[k, 16*j0 + j1]
""" + register_tile_store("i3", "j3"))


def test_accumulate_loads_when_the_nest_before_sets_only_part_of_the_box():
    after = apply_all(kernel(tile_after_adjacent_init(init_cols=8)),
                      ["accumulate C at i1 as acc in register"])
    text = print_program(after)
    assert "C[4*i0 + i, 16*j0 + j] = 0" in text          # the partial nest stays
    assert "acc[i2, j2] = C[4*i0 + i2, 16*j0 + j2]" in text
    assert_same_outputs(kernel(tile_after_adjacent_init(init_cols=8)), after)


def test_accumulate_with_a_tail_clamps_the_store():
    golden(TAIL, ["accumulate s at i1 as acc"], """\
for i0 in 0..(N + 31) // 32:
  local acc: f32[32]
  for i1 in 0..min(32, N - 32*i0):
    acc[i1] = 0
    for k in 0..K:
      acc[i1] += A[32*i0 + i1, k]
  for i2 in 0..min(32, N - 32*i0):
    s[32*i0 + i2] = acc[i2]
""")


def test_accumulate_decided_by_the_checker_when_forms_do_not_tell():
    before = kernel(kernel_text("k(N = 64)", "in A: f32[N, 4]; out B: f32[N, 4]", """\
for i0 in 0..N // 16:
  for r in 0..64:
    B[16*i0 + r // 4, r % 4] = A[16*i0 + r // 4, r % 4]
"""))
    after = apply_all(before, ["accumulate B at r as acc"])
    text = print_program(after)
    assert "acc[r // 4, r % 4] = A[16*i0 + r // 4, r % 4]" in text
    assert "= B[" not in text   # every element is written before it is read: no load
    assert_same_outputs(before, after)


# --------------------------------------------------------------------------- layout

def test_layout_of_a_staged_local():
    # Bt's two dimensions swapped, in its declaration and in every access
    golden(TILED, ["stage B at j0 as Bt", "layout Bt 1 0"],
           TILED_STAGED.replace("Bt: f32[K, 16]", "Bt: f32[16, K]")
           .replace("Bt[k1, j2]", "Bt[j2, k1]").replace("Bt[k, j1]", "Bt[j1, k]"))


def test_layout_of_a_temp_and_its_inverse():
    before = load_kernel("attention", info("attention").test_sizes)
    after = apply_all(before, ["layout P 1 0"])
    assert "temp P: f32[S, S]" in print_program(after)
    assert "P[j, i] += Q[i, d] * K[j, d]" in print_program(after)
    assert_same_outputs(before, after)
    assert apply_all(after, ["layout P 1 0"]) == before


# --------------------------------------------------------------------------- inline / materialize

def test_materialize_then_inline_round_trip():
    before = kernel(MATMUL)
    middle = golden(MATMUL, ["materialize s1 as t"], """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
    for k in 0..K:
      local t: f32
      t = A[i, k] * B[k, j]
      C[i, j] += t
""")
    assert REGISTRY["inline"].enumerate(middle) == ["inline t"]
    assert apply_all(middle, ["inline t"]) == before


def test_inline_undoes_a_scalar_stage():
    before = kernel(MATMUL)
    assert apply_all(before, ["stage A at k as At", "inline At"]) == before


def test_materialize_default_names_are_fresh():
    program = apply_all(kernel(MATMUL), ["materialize s1 as t"])
    assert REGISTRY["materialize"].enumerate(program) == ["materialize s1 as t2"]
    assert REGISTRY["stage"].enumerate(apply_all(kernel(MATMUL), ["stage A at k as At"]))[0] \
        == "stage A at i as At2"


I8 = kernel_text("q8(N = 40)", "in A: i8[N]; out D: i8[N]; out E: i8; out F: i8", """\
E = 0
F = 0
for i in 0..N:
  D[i] = 0
  D[i] max= A[i] * 3
for k in 0..N:
  E max= A[k] * A[k]
for m in 0..N:
  F max= A[m]
""")


def test_i8_materialize_inline_and_vectorize_keep_the_wrap():
    """Stores into i8 wrap modulo 256, which commutes with max only for values in range:
    materialize computes an i8 target's value in an i32 local, inline keeps an i8 local
    that holds more than a plain i8 element, vectorize refuses a max= of wrapped values."""
    before = kernel(I8)
    A = np.arange(-128, 128, 256 // 40, dtype=np.int8)[:40]
    want = interp.run(before, {"A": A})
    after = apply_all(before, ["materialize s3 as t"])
    assert "  local t: i32\n  t = A[i] * 3\n  D[i] max= t\n" in print_program(after)
    for name, value in interp.run(after, {"A": A}).items():
        np.testing.assert_array_equal(value, want[name])
    assert apply_all(after, ["inline t"]) == before
    narrowed = kernel(print_program(after).replace("local t: i32", "local t: i8"))
    assert explain(narrowed, "inline t") == \
        "inlining the i8 local 't' would skip the wrap-around of its store"
    assert apply_all(before, ["stage A at i as At", "inline At"]) == before
    assert explain(before, "vectorize k") == ("loop 'k' carries a dependence that is not a "
                                              "reduction, so its iterations cannot run as SIMD lanes")
    assert explain(before, "vectorize m") is None and explain(before, "vectorize i") is None


# --------------------------------------------------------------------------- refusals

SHIFT = kernel_text("shift(N = 10)", "in A: f32[N, N]; out B: f32[N, N]; out s: f32[N]", """\
for i in 0..N:
  s[i] = 0
  for j in 0..i:
    s[i] += A[i - 1, j]
for i2 in 0..N:
  for j2 in 0..i2:
    B[i2 - 1, j2] = A[i2, j2]
""")

ROWS_HEAD = kernel_text("rows(N = 6, M = 5)", "in A: f32[N, M]; out B: f32[N, M]", """\
""")
ROWSUM = ROWS_HEAD + row_normalize_body("A", "B", " parallel")


def test_expand_gives_each_iteration_its_slot():
    golden(ROWSUM, ["expand s at i"], ROWS_HEAD + """\
local s: f32[N]
for i in 0..N parallel:
  s[i] = 0
  for j in 0..M:
    s[i] += A[i, j]
  for k in 0..M:
    B[i, k] = A[i, k] / s[i]
""")


def test_expand_lets_fission_split_a_writer_from_its_reader():
    """Without the expansion the sum's local would be used on both sides of the split."""
    program = kernel(ROWSUM)
    assert "used both up to and after 'j'" in explain(program, "fission i after j")
    after = golden(ROWSUM, ["expand s at i", "fission i after j"], ROWS_HEAD + """\
local s: f32[N]
for i in 0..N parallel:
  s[i] = 0
  for j in 0..M:
    s[i] += A[i, j]
for i2 in 0..N parallel:
  for k in 0..M:
    B[i2, k] = A[i2, k] / s[i2]
""")
    assert REGISTRY["expand"].enumerate(after) == []       # no local left inside a loop


def test_expand_of_a_stack_local_lets_the_generators_place_it():
    golden(ROWS_HEAD + """\
for i in 0..N:
  local u: f32[M] in stack
  for j in 0..M:
    u[j] = A[i, j] + 1
  for k in 0..M:
    B[i, k] = u[k] * 2
""", ["expand u at i"], ROWS_HEAD + """\
local u: f32[N, M]
for i in 0..N:
  for j in 0..M:
    u[i, j] = A[i, j] + 1
  for k in 0..M:
    B[i, k] = u[i, k] * 2
""")


def test_expand_of_a_split_loop_indexes_by_the_inner_iterator_and_keeps_dims():
    source = kernel_text("t(N = 8, M = 4)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i0 in 0..N // 4:
  for i1 in 2..6:
    local u: f32[M]
    for j in 0..M:
      u[j] = A[4*i0 + i1 - 2, j] * 2
    for k in 0..M:
      B[4*i0 + i1 - 2, k] = u[k] + 1
""")
    golden(source, ["expand u at i1"], kernel_text("t(N = 8, M = 4)",
                                                   "in A: f32[N, M]; out B: f32[N, M]", """\
for i0 in 0..N // 4:
  local u: f32[4, M]
  for i1 in 2..6:
    for j in 0..M:
      u[i1 - 2, j] = A[4*i0 + i1 - 2, j] * 2
    for k in 0..M:
      B[4*i0 + i1 - 2, k] = u[i1 - 2, k] + 1
"""))


TRIANGLE = kernel_text("tri(N = 10)", "in A: f32[N, N]; out L: f32[N, N]; out s: f32[N]", """\
for i in 0..N:
  for j in 0..i + 1:
    L[i, j] = A[i, j]
for i2 in 0..N:
  s[i2] = 0
  for j2 in 0..i2 + 1:
    s[i2] += L[i2, j2]
for i3 in 0..N:
  for j3 in 0..i3 + 1:
    L[i3, j3] += 1
""")

GPU = kernel_text("mm(N = 64, K = 32)", "in A: f32[N, K]; out s: f32[N]", """\
for i0 in 0..N // 32 gpu.block.x:
  for i1 in 0..32 gpu.thread.x:
    s[32*i0 + i1] = 0
    for k in 0..K:
      s[32*i0 + i1] += A[32*i0 + i1, k]
""")

VECTOR = kernel_text("v(N = 16, M = 8)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N vector:
  for j in 0..M vector:
    B[i, j] = A[i, j] * 2.0
""")

BIG = kernel_text("big(N = 2048, K = 1024)",
                  "in A: f32[N, K]; out C: f32[N, K]; out s: f32[2]", """\
for r in 0..2:
  s[r] = 0
  for i in 0..N:
    for k in 0..K:
      s[r] += A[i, k]
for i2 in 0..N:
  for k2 in 0..K:
    C[i2, k2] = A[i2, k2]
""")

LOCALS = """\
kernel loc(N = 8, M = 4)
in  A: f32[N, M]
in  x: f32[M]
out y: f32[N]
temp T: f32[N, M]

for i in 0..N:
  local u: f32[M]
  local b: bf16
  local t: f32
  local w: f32
  b = 1
  t = A[i, 0] * 2.0
  w = 0
  w += t
  for j in 0..M:
    u[j] = A[i, j] + t
    T[i, j] = u[j]
  y[i] = w + u[0] + x[0]
"""

HAZARD = kernel_text("haz(N = 8)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  local t: f32
  B[i] = A[i]
  t = B[i] * 2.0
  B[i] = 0
  C[i] = t
""")

OUTSIDE = kernel_text("o(N = 8)", "in A: f32[N]; out B: f32[N]", """\
local u: f32
for j in 0..N:
  u = A[j]
for i in 0..N:
  B[i] = u
""")

UPDATED = kernel_text("upd(N = 8)", "in A: f32[N]; out B: f32[N]", """\
for i in 0..N:
  local t: f32
  t max= A[i]
  B[i] = t
""")

SELF = kernel_text("slf(N = 8)", "in A: f32[N]; out B: f32[N]", """\
for i in 0..N:
  local t: f32
  t = t + A[i]
  B[i] = t
""")

BF16 = kernel_text("bf(N = 8)", "in A: bf16[N]; out B: bf16[N]", """\
for i in 0..N:
  B[i] = 0
  B[i] += A[i] * A[i]
""")

REGISTER = kernel_text("r(N = 4, M = 16)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N:
  local acc: f32[M] in register
  for j in 0..M:
    acc[j] = A[i, j]
  for k in 0..M:
    B[i, k] = acc[k]
""")

GPU_LOCAL = kernel_text("g(N = 64)", "in A: f32[N]; out B: f32[N]", """\
for i0 in 0..N // 32 gpu.block.x:
  for i1 in 0..32 gpu.thread.x:
    local t: f32
    t = A[32*i0 + i1] * 2
    B[32*i0 + i1] = t
""")

BIG_LOCAL = kernel_text("bl(N = 2048, M = 1024)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N:
  local t: f32[M]
  for j in 0..M:
    t[j] = A[i, j] * 2
  for k in 0..M:
    B[i, k] = t[k]
""")

NO_ITERATIONS = kernel_text("ni(N = 4)", "in A: f32[N]; out B: f32[N]", """\
for k in 0..N:
  B[k] = A[k]
for i in 1..1:
  local t: f32[N]
  for j in 0..N:
    t[j] = A[j] * 2
  for k2 in 0..N:
    B[k2] = t[k2]
""")

TRIANGLE_LOCAL = kernel_text("tl(N = 6)", "in A: f32[N, N]; out B: f32[N, N]", """\
for i in 0..N:
  for j in 0..i + 1:
    local t: f32
    t = A[i, j] + 1
    B[i, j] = t
""")

TRIANGLE_TEMP = kernel_text("tt(N = 6)", "in A: f32[N, N]; out B: f32[N, N]; temp T: f32[N]", """\
for i in 0..N:
  for j in 0..i + 1:
    for k in 0..N:
      T[k] = A[i, k]
    B[i, j] = T[j]
""")


def test_expand_over_a_loop_of_varying_extent_takes_its_bound():
    # j runs 0..i + 1 with i < 6: six slots hold every iteration's copy
    golden(TRIANGLE_LOCAL, ["expand t at j"], kernel_text(
        "tl(N = 6)", "in A: f32[N, N]; out B: f32[N, N]", """\
for i in 0..N:
  local t: f32[6]
  for j in 0..i + 1:
    t[j] = A[i, j] + 1
    B[i, j] = t[j]
"""))


PREFETCHED_TEMP = kernel_text("pt(N = 6)", "in A: f32[N, N]; out B: f32[N, N]; temp T: f32[N]", """\
for i in 0..N:
  prefetch T[0..N]
  for k in 0..N:
    T[k] = A[i, k]
  for j in 0..N:
    B[i, j] = T[j]
""")


def test_expand_of_a_temp_gives_its_prefetch_boxes_the_slot():
    # the prefetch inside the loop touches this iteration's copy: one more range, and
    # the program stays valid for the next step (a stale box of rank 1 crashed layout)
    after = golden(PREFETCHED_TEMP, ["expand T at i"], kernel_text(
        "pt(N = 6)", "in A: f32[N, N]; out B: f32[N, N]; temp T: f32[N, N]", """\
for i in 0..N:
  prefetch T[i, 0..N]
  for k in 0..N:
    T[i, k] = A[i, k]
  for j in 0..N:
    B[i, j] = T[i, j]
"""))
    assert "  prefetch T[0..N, i]\n" in print_program(apply_step(after, "layout T 1 0"))


TAIL_LOCAL = kernel_text("tl(N = 12)", "in A: f32[N, N]; out B: f32[N, N]", """\
for i in 0..N:
  for j0t in max(i // 4, 0)..(i + 3) // 4:
    local t: f32
    t = A[i, j0t] + 1
    B[i, j0t] = t
""")

REFUSALS = [
    # stage
    ("stage-no-loop", TILED, "stage B at q as Bt",
     "there is no loop 'q'"),
    ("stage-unknown-array", TILED, "stage Z at j0 as Bt",
     "there is no array or local 'Z' visible at loop 'j0'"),
    ("stage-not-accessed", LOCALS, "stage x at j as xt",
     "'x' is not accessed inside loop 'j'"),
    ("stage-vectorized", VECTOR, "stage A at j as At",
     "loop 'j' is vectorized and its body must stay free of loops; stage before vectorizing"),
    ("stage-no-box", SHIFT, "stage A at i as At",
     "the footprint of 'A' in one iteration of 'i' has no usable bounding box (its offset "
     "falls outside the array in iterations where the footprint is empty)"),
    ("stage-name-taken", TILED, "stage B at j0 as A",
     "the name 'A' is already taken"),
    ("stage-name-invalid", TILED, "stage B at j0 as for",
     "'for' is not a valid name"),
    ("stage-too-big", BIG, "stage A at r as At",
     "the footprint of 'A' in 'r' has 2097152 elements, more than the 1048576 a local "
     "buffer may hold"),
    ("stage-register", TILED_WIDE, "stage B at j0 as Bt in register",
     "the footprint of 'B' in 'j0' has 1280 elements, more than the 1024 that fit in registers"),
    ("stage-shared-no-block", TILED, "stage B at j0 as Bt in shared",
     "a shared buffer must be declared inside a gpu.block loop"),
    ("stage-shared-in-thread", GPU, "stage A at i1 as At in shared",
     "a shared buffer must be declared outside gpu.thread loops"),
    ("stage-uninitialised", TRIANGLE, "stage L at i2 as Lt",
     "some elements of 'L' copied at the start of 'i2' are not initialised there"),
    # accumulate
    ("acc-no-loop", MATMUL, "accumulate C at q as acc",
     "there is no loop 'q'"),
    ("acc-unknown-array", MATMUL, "accumulate Z at k as acc",
     "there is no array or local 'Z' visible at loop 'k'"),
    ("acc-not-written", MATMUL, "accumulate A at k as acc",
     "'A' is not written inside loop 'k' (stage it instead)"),
    ("acc-in-vector-loop", VECTOR, "accumulate B at j as acc",
     "loop 'j' is the body of the vectorized loop 'i'; accumulate before vectorizing"),
    ("acc-no-box", SHIFT, "accumulate B at j2 as acc",
     "the footprint of 'B' in loop 'j2' has no usable bounding box (its offset falls "
     "outside the array in iterations where the footprint is empty)"),
    ("acc-name-taken", MATMUL, "accumulate C at k as B",
     "the name 'B' is already taken"),
    ("acc-too-big", BIG, "accumulate C at i2 as acc",
     "the footprint of 'C' in 'i2' has 2097152 elements, more than the 1048576 a local "
     "buffer may hold"),
    ("acc-register", TILED_WIDE, "accumulate C at j0 as acc in register",
     "the footprint of 'C' in 'j0' has 2304 elements, more than the 1024 that fit in registers"),
    ("acc-uninitialised", TRIANGLE, "accumulate L at i3 as acc",
     "L's elements in i3 are not all initialised before i3"),
    # expand
    ("expand-no-loop", ROWSUM, "expand s at q",
     "there is no loop 'q'"),
    ("expand-not-declared-there", LOCALS, "expand u at j",
     "'u' is not a local declared directly in the body of loop 'j'"),
    ("expand-register", REGISTER, "expand acc at i", "'acc' lives in register storage, which "
     "cannot grow by a loop's extent"),
    ("expand-gpu", GPU_LOCAL, "expand t at i1",
     "loop 'i1' is bound to the GPU grid"),
    ("expand-varying-extent", TRIANGLE_TEMP, "expand T at j",
     "loop 'j' has no constant extent at these sizes"),
    ("expand-minmax-start", TAIL_LOCAL, "expand t at j0t",
     "loop 'j0t' starts at a min() or max(), so its slots 'j0t' - start would not be an "
     "affine index"),
    ("expand-no-iterations", NO_ITERATIONS, "expand t at i",
     "loop 'i' runs no iterations at these sizes: there is nothing to expand"),
    ("expand-too-big", BIG_LOCAL, "expand t at i",
     "'t' expanded over 'i' would have 2097152 elements, more than the 1048576 a local "
     "buffer may hold"),
    # layout
    ("layout-unknown", LOCALS, "layout Q 1 0",
     "there is no local or temp buffer 'Q'"),
    ("layout-interface", LOCALS, "layout A 1 0",
     "'A' is an in array of the kernel's interface; only locals and temps change layout"),
    ("layout-not-permutation", LOCALS, "layout T 0 0",
     "0 0 is not a permutation of the 2 dimensions of 'T'"),
    ("layout-identity", LOCALS, "layout T 0 1",
     "the identity permutation changes nothing"),
    # inline
    ("inline-unknown", LOCALS, "inline q",
     "there is no local 'q'"),
    ("inline-array", LOCALS, "inline A",
     "'A' is an array of the kernel, not a local"),
    ("inline-not-scalar", LOCALS, "inline u",
     "'u' is not a scalar local"),
    ("inline-bf16", LOCALS, "inline b",
     "inlining the bf16 local 'b' would skip the rounding of its stores"),
    ("inline-assigned-twice", LOCALS, "inline w",
     "'w' is assigned 2 times; inline needs a single definition"),
    ("inline-updated", UPDATED, "inline t",
     "'t' is updated with 'max=', not defined once with '='"),
    ("inline-reads-itself", SELF, "inline t",
     "the definition of 't' reads 't'"),
    ("inline-read-outside", OUTSIDE, "inline u",
     "'u' is read outside the statements that follow its definition in its block"),
    ("inline-source-overwritten", HAZARD, "inline t",
     "'B' is written between the definition of 't' and its last read"),
    # materialize
    ("materialize-not-assignment", MATMUL, "materialize k as t",
     "'k' is not an assignment (name one as sN, the N-th in textual order)"),
    ("materialize-plain", MATMUL, "materialize s0 as t",
     "the value of s0 is already a plain access, iterator or constant"),
    ("materialize-bf16-update", BF16, "materialize s1 as t",
     "a bf16 local would round the value of s1 before the '+=' update"),
    ("materialize-name-taken", MATMUL, "materialize s1 as A",
     "the name 'A' is already taken"),
]


@pytest.mark.parametrize("source, step, reason", [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_refusal_reason(source, step, reason):
    program = parse(source)
    if source not in (SELF, UPDATED):     # these two read t before writing it
        assert check(program) == []
    assert explain(program, step) == reason
    with pytest.raises(NotApplicable):
        apply_step(program, step)
    assert step not in [a for t in MINE for a in REGISTRY[t].enumerate(program)]


@pytest.mark.parametrize("step", [
    "stage B at j0", "stage B at j0 as Bt in heap", "stage B j0 as Bt", "accumulate C at k as acc in shared",
    "layout T", "layout T 1 x", "inline", "inline a b", "materialize s1", "materialize s1 to t",
    "expand", "expand t", "expand t i", "expand t at"])
def test_usage_errors(step):
    with pytest.raises(NotApplicable):
        apply_step(kernel(TILED), step)


# --------------------------------------------------------------------------- properties

def test_enumerated_texts_round_trip_and_are_legal():
    program = apply_all(kernel(MATMUL), ["split i by 4", "stage A at k as At"])
    for name in MINE:
        t = REGISTRY[name]
        for text in t.enumerate(program):
            params = t.parse(text.split()[1:])
            assert t.format(params) == text
            assert t.check(program, params) is None


def test_enumeration_on_matmul_after_ten_steps_is_cheap():
    steps = ["split i by 32", "split j by 64", "split k by 16", "split i1 by 4",
             "split j1 by 16", "stage B at j0 as Bt", "accumulate C at k0 as acc",
             "materialize s3 as t", "layout Bt 1 0", "inline t"]
    program = apply_all(load_kernel("matmul"), steps)
    best = None
    for _ in range(3):
        fresh = apply_all(load_kernel("matmul"), steps)   # new objects: no memo hits
        footprint.CACHE.program = None
        start = time.perf_counter()
        found = [text for name in MINE for text in REGISTRY[name].enumerate(fresh)]
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    assert found and any(t.startswith("stage") for t in found)
    assert any(t.startswith("accumulate") for t in found)
    assert best < 0.1, f"enumeration took {best * 1e3:.1f} ms"
    assert program == fresh


def _spread(texts, count):
    if len(texts) <= count:
        return list(texts)
    step = len(texts) / count
    return [texts[int(k * step)] for k in range(count)]


@pytest.mark.parametrize("name", list_kernels())
def test_sampled_applications_keep_outputs(name):
    before = load_kernel(name, info(name).test_sizes)
    for kind in MINE:
        for text in _spread(REGISTRY[kind].enumerate(before), 3):
            after = apply_step(before, text)
            assert check(after) == [], text
            assert_same_outputs(before, after, context=f"after {text} on {name}")


@pytest.mark.parametrize("name", list_kernels())
def test_random_sequences_keep_outputs(name):
    before = load_kernel(name, info(name).test_sizes)
    rng = random.Random(name)
    program, texts = before, []
    for texts, program in walk(before, rng, 6, ("split", "interchange") + MINE, MINE, 0.7):
        pass
    assert check(program) == [], texts
    assert_same_outputs(before, program, context=f"after {texts} on {name}")
