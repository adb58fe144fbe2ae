"""Kernel texts shared by the tests: the matrix product at any sizes, and a vector add.

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
