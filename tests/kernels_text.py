"""Kernel texts shared by the tests: the matrix product at any sizes, a vector add, bodies
that several tests' kernels share, and the helpers that put a kernel text together
(``kernel_text``: kernel line, declarations and body; ``with_body``: another body under a
text's declarations, as most steps print it; ``head``: a text's kernel line and declarations).

``matmul_text(N, M, K, name)`` is exactly the text the tests used to spell out in each file
(C = A·B with C zeroed first, f32), so the programs, and the steps that name its loops
(i, j, k) and its statements (s0 the zeroing, s1 the update), are unchanged."""
from __future__ import annotations


def matmul_text(n: int, m: int, k: int, name: str = "matmul") -> str:
    """The source of ``kernel NAME(N = n, M = m, K = k)``: C[N, M] = A[N, K] · B[K, M]."""
    return f"""\
kernel {name}(N = {n}, M = {m}, K = {k})
in  A: f32[N, K]
in  B: f32[K, M]
out C: f32[N, M]

for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
    for k in 0..K:
      C[i, j] += A[i, k] * B[k, j]
"""


VADD = """\
kernel vadd(N = 16)
in  A: f32[N]
in  B: f32[N]
out C: f32[N]

for i in 0..N:
  C[i] = A[i] + B[i]
"""


def head(text: str) -> str:
    """The kernel line and declarations of a kernel text, with the blank line after them."""
    declarations, blank, _ = text.partition("\n\n")
    assert blank, text
    return declarations + blank


def with_body(text: str, body: str) -> str:
    """The kernel text with text's kernel line and declarations and another body: what a step
    that leaves the declarations alone prints."""
    return head(text) + body


def kernel_text(signature: str, declarations: str, body: str) -> str:
    """The text of ``kernel SIGNATURE``: the declarations (``"in A: f32[N]; out B: f32[N]"``)
    one a line with their kinds padded to the longest, as the printer writes them, a blank
    line, then body."""
    rows = [d.split(None, 1) for d in declarations.split(";")]
    width = max(len(kind) for kind, _ in rows)
    lines = [f"{kind.ljust(width)} {rest.strip()}" for kind, rest in rows]
    return f"kernel {signature}\n" + "\n".join(lines) + "\n\n" + body


# the i8 stores that wrap (D[i, 0..3] of a kernel with in A: i8[N], out D: i8[N, columns])
I8_WRAPPING_STORES = """\
for i in 0..N:
  D[i, 0] = A[i] * A[i]
  D[i, 1] = A[i] + 300
  D[i, 2] = 0
  D[i, 2] max= A[i] * 2
  D[i, 3] = (A[i] * 4) // 3
"""


def row_normalize_body(x: str, y: str, annotation: str = "") -> str:
    """The body of a kernel over N x M arrays: each row of y is that row of x divided by its
    sum, kept in a local s (annotation: on the row loop i, like " parallel")."""
    return f"""\
for i in 0..N{annotation}:
  local s: f32
  s = 0
  for j in 0..M:
    s += {x}[i, j]
  for k in 0..M:
    {y}[i, k] = {x}[i, k] / s
"""


def matmul_split_i(factor: int) -> str:
    """The loops of matmul_text after ``split i by FACTOR``, the tiles of N // FACTOR rows
    (all of N where FACTOR divides it)."""
    f = factor
    return f"""\
for i0 in 0..N // {f}:
  for i1 in 0..{f}:
    for j in 0..M:
      C[{f}*i0 + i1, j] = 0
      for k in 0..K:
        C[{f}*i0 + i1, j] += A[{f}*i0 + i1, k] * B[k, j]
"""


def matmul_tile_steps(rows: int, cols: int, space: str = " in register") -> list:
    """Steps of the library matmul (its loops i, j, k; s0 the zeroing) that tile C into
    rows x cols blocks accumulated in a local ``acc`` over all of k (``space``: `` in
    register`` or ``""``), the rows unrolled and the columns vectorized."""
    return ["fission j after s0", f"split i by {rows}", f"split j2 by {cols}",
            "fission i1 after j", "fission i0 after i1", "interchange i2 j20",
            "interchange j21 k", "interchange i2 k", "interchange i3 j20",
            f"accumulate C at k as acc{space}", "unroll i2", "vectorize j21"]


# C[M, N] = A[M, K] · B[K, N] with rows i and columns j, the loops a kernel's body starts
# with; lines after it indented 4 stay in the loop j, indented 2 in the loop i
MATMUL_MN_LOOPS = """\
for i in 0..M:
  for j in 0..N:
    C[i, j] = 0
    for k in 0..K:
      C[i, j] += A[i, k] * B[k, j]
"""


# softmax's three row passes (max, exp + sum, scale) at small sizes
SOFTMAX_ROWS = kernel_text("rows(N = 6, M = 64)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N:
  local m: f32
  local s: f32
  m = -inf
  for j in 0..M:
    m max= X[i, j]
  s = 0
  for k in 0..M:
    Y[i, k] = exp(X[i, k] - m)
    s += Y[i, k]
  for l in 0..M:
    Y[i, l] = Y[i, l] / s
""")
