"""Where a vector loop's accesses go (``codegen.vector_access``): the coefficient of its
iterator in an index, in the flattened index of an access, and the reductions the loop
accumulates in vector registers."""
from dojo_core import ir
from dojo_core.codegen.c import CGenerator
from dojo_core.codegen.targets import get_target
from dojo_core.codegen.vector_access import coef, flat_coef, reduction_plan
from dojo_core.source import load_source

GRID = """\
kernel grid(N = 8, M = 16)
in  X: f32[N, M]
inout y: f32[N]
out Z: f32[N, M]

for i in 0..N:
  for j in 0..M:
    Z[i, j] = X[i, j] + X[j % 8, i]
    y[i] += X[i, j]
"""

SELF_READ = """\
kernel self_read(N = 8, M = 16)
in  X: f32[N, M]
inout y: f32[N]

for i in 0..N:
  for j in 0..M:
    y[i] += X[i, j] * y[i]
"""

READ_BY_ANOTHER = """\
kernel read_by_another(N = 8, M = 16)
in  X: f32[N, M]
inout y: f32[N]
out Z: f32[N, M]

for i in 0..N:
  for j in 0..M:
    y[i] += X[i, j]
    Z[i, j] = y[i]
"""


def _generator(program) -> CGenerator:
    """A C generator that has translated ``program`` (so its buffers are registered)."""
    gen = CGenerator(program, get_target("x86-avx2"))
    gen.generate()
    return gen


def _inner(program) -> ir.Loop:
    return next(l for l in ir.loops(program) if l.iterator == "j")


def _accesses(stmt):
    return [stmt.target] + [e for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access)]


def test_the_coefficient_of_an_iterator_in_an_affine_index():
    program = load_source(GRID)
    z, x_row, x_swapped = _accesses(ir.assignments(program)[0])
    sizes = program.size_values
    assert [coef(e, "j", sizes) for e in z.indices] == [0, 1]
    assert [coef(e, "i", sizes) for e in x_row.indices] == [1, 0]
    assert coef(x_swapped.indices[0], "j", sizes) is None      # j % 8 is not affine in j
    assert coef(x_swapped.indices[1], "j", sizes) == 0


def test_the_coefficient_in_the_flattened_index_counts_the_row_length():
    program = load_source(GRID)
    gen = _generator(program)
    z, x_row, x_swapped = _accesses(ir.assignments(program)[0])
    sizes = program.size_values
    assert flat_coef(gen.ex.buffers["Z"], z.indices, "j", sizes) == 1
    assert flat_coef(gen.ex.buffers["Z"], z.indices, "i", sizes) == 16
    assert flat_coef(gen.ex.buffers["X"], x_swapped.indices, "i", sizes) == 1
    assert flat_coef(gen.ex.buffers["X"], x_swapped.indices, "j", sizes) is None


def test_a_reduction_into_an_element_invariant_in_the_loop_is_planned():
    program = load_source(GRID)
    gen = _generator(program)
    plan = reduction_plan(gen, _inner(program))
    assert [(k, stmt.target.array) for k, stmt in plan] == [(1, "y")]


def test_a_reduction_that_reads_its_own_element_is_not_planned():
    program = load_source(SELF_READ)
    assert reduction_plan(_generator(program), _inner(program)) is None


def test_a_reduction_another_statement_of_the_loop_reads_is_not_planned():
    program = load_source(READ_BY_ANOTHER)
    gen = _generator(program)
    assert reduction_plan(gen, _inner(program)) is None
