"""Host code of the CUDA translation unit (see ``cuda.py``): the launch sequence, the
``dojo_run`` library entry, ``dojo_error_string``, and the ``DOJO_STANDALONE`` main.

``dojo_run`` allocates every array, temp and top-level local on the device, copies the
in and inout arrays in (bf16 inputs are rounded to bfloat16, as the interpreter does),
runs the program once (warm-up; the outputs of this run are the ones copied back), then
times ``reps`` more runs, each between two CUDA events, into ``times_ms`` (inout arrays are
restored to their input before each timed run, outside the events). Every CUDA call is
checked; the first error is returned as its ``cudaError_t`` code after freeing everything.

The standalone main (``nvcc -DDOJO_STANDALONE``): ``./prog [--reps N] [--in DIR] [--out DIR]``
reads each input from ``DIR/NAME.bin`` (raw, C order, the numpy dtype of the array: float32
for f32 and bf16) or, without ``--in``, fills it with a deterministic pattern in the kernel's
input range; runs ``dojo_run``; prints one JSON line (``kernel``, ``reps``, ``median_ms``,
``min_ms``, ``max_ms``, ``checksum``: the sum of each output in double); writes the outputs
to ``DIR/NAME.bin`` with ``--out``. Exit status 0, 1 on a CUDA or I/O error, 2 on usage.
"""
from __future__ import annotations

from ..poly import const_value
from .cuda_expr import CTYPES, literal

INDENT = "  "


def _count(gen, decl) -> int:
    n = 1
    for d in decl.dims:
        n *= const_value(d, gen.sizes)
    return n


def _kind(decl) -> str:
    return getattr(decl, "kind", "local")


def _is_value(decl) -> bool:
    return _kind(decl) == "in" and not decl.dims


# --------------------------------------------------------------------------- launches

def _launch_lines(gen, items, depth, out):
    pad = INDENT * depth
    for item in items:
        if item[0] == "for":
            _, loop, inner = item
            it = gen.names[loop.iterator]
            lo, hi = gen.ex.index(loop.lo)[0], gen.ex.index(loop.hi)[0]
            out.append(f"{pad}for (int {it} = {lo}; {it} < {hi}; {it}++) {{")
            _launch_lines(gen, inner, depth + 1, out)
            out.append(f"{pad}}}")
            continue
        k = item[1]
        args = ", ".join(gen.names[p] for p in k.params)
        if k.serial:
            out.append(f"{pad}{k.name}<<<1, 1>>>({args});")
            out.append(f"{pad}DOJO_TRY(cudaGetLastError());")
            continue
        grid = {"x": "1", "y": "1", "z": "1"}
        dynamic, empty = [], False
        for g in k.grid:
            if isinstance(g.dim, int):
                grid[g.axis] = str(g.dim)
                empty = empty or g.dim == 0
            else:
                var = f"dojo_g{g.axis}"
                expr = g.dim
                if g.strided:
                    gen.helpers.use("imin")
                    expr = f"dojo_imin({expr}, 65535)"
                dynamic.append((var, expr))
                grid[g.axis] = var
        block = k.block
        if empty:
            out.append(f"{pad}/* kernel {k.index}: the grid is empty, nothing to launch */")
            continue
        launch = (f"{k.name}<<<{_dim3(grid)}, {_dim3({a: str(block[a]) for a in 'xyz'})}>>>"
                  f"({args});")
        if dynamic:
            out.append(f"{pad}{{")
            for var, expr in dynamic:
                out.append(f"{pad}{INDENT}const int {var} = {expr};")
            cond = " && ".join(f"{var} > 0" for var, _ in dynamic)
            out.append(f"{pad}{INDENT}if ({cond}) {{")
            out.append(f"{pad}{INDENT * 2}{launch}")
            out.append(f"{pad}{INDENT * 2}DOJO_TRY(cudaGetLastError());")
            out.append(f"{pad}{INDENT}}}")
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}{launch}")
            out.append(f"{pad}DOJO_TRY(cudaGetLastError());")


def _dim3(d) -> str:
    vals = [d["x"], d["y"], d["z"]]
    while len(vals) > 1 and vals[-1] == "1":
        vals.pop()
    return f"dim3({', '.join(vals)})"


def _launch_params(gen) -> list:
    out = []
    for name in gen.globals:
        d = gen.global_decls[name]
        ctype, c = CTYPES[d.dtype], gen.names[name]
        if _is_value(d):
            out.append(f"const {ctype} {c}")
        elif _kind(d) == "in":
            out.append(f"const {ctype} *{c}")
        else:
            out.append(f"{ctype} *{c}")
    return out


def host_code(gen) -> str:
    lines = ["/* ---------------------------------------------------------------- host */", "",
             "#define DOJO_TRY(call) do { cudaError_t dojo_e = (call); "
             "if (dojo_e != cudaSuccess) return dojo_e; } while (0)",
             "#define DOJO_CHECK(call) do { cudaError_t dojo_e = (call); "
             "if (dojo_e != cudaSuccess) { dojo_err = (int)dojo_e; goto dojo_done; } } while (0)", "",
             "/* every kernel once, in program order (device pointers) */",
             f"static cudaError_t dojo_launch({', '.join(_launch_params(gen)) or 'void'})", "{"]
    _launch_lines(gen, gen.host, 1, lines)
    lines += [f"{INDENT}return cudaSuccess;", "}", ""]
    if any(gen.global_decls[n].dtype == "bf16" and _kind(gen.global_decls[n]) in ("in", "inout")
           and gen.global_decls[n].dims for n in gen.globals):
        gen.helpers.use("round_bf16")
        lines += ["__global__ void dojo_round_bf16_kernel(float *x, long long n)", "{",
                  f"{INDENT}long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                  f"{INDENT}if (i < n) x[i] = dojo_round_bf16(x[i]);", "}", ""]
    lines += _run(gen)
    lines += ["", "extern \"C\" const char *dojo_error_string(int code)", "{",
              f"{INDENT}return cudaGetErrorString((cudaError_t)code);", "}"]
    lines += [""] + _main(gen)
    return "\n".join(lines)


def _run(gen) -> list:
    p = gen.program
    io = [d for d in p.arrays if d.kind != "temp"]
    params = []
    for d in io:
        c = gen.names[d.name]
        params.append(f"{'const ' if d.kind == 'in' else ''}{CTYPES[d.dtype]} *{c}")
    params += ["int dojo_reps", "float *dojo_times_ms"]
    out = ["/* allocate, copy in, run once (the results), time `reps` more runs; 0 or a cudaError_t */",
           f"extern \"C\" int dojo_run({', '.join(params)})", "{", f"{INDENT}int dojo_err = 0;",
           f"{INDENT}int dojo_r;"]
    dev, vals, inouts = [], [], []
    for name in gen.globals:
        d = gen.global_decls[name]
        c = gen.names[name]
        if _is_value(d):
            vals.append((d, f"dojo_v_{c}"))
            out.append(f"{INDENT}{CTYPES[d.dtype]} dojo_v_{c} = 0;")
        else:
            dev.append((d, f"dojo_d_{c}"))
            out.append(f"{INDENT}{CTYPES[d.dtype]} *dojo_d_{c} = NULL;")
            if _kind(d) == "inout":
                inouts.append((d, f"dojo_s_{c}"))
                out.append(f"{INDENT}{CTYPES[d.dtype]} *dojo_s_{c} = NULL;")
    out.append(f"{INDENT}cudaEvent_t dojo_start = NULL, dojo_stop = NULL;")
    out.append("")

    def nbytes(d):
        return f"(size_t){_count(gen, d)} * sizeof({CTYPES[d.dtype]})"
    for d, v in dev + inouts:
        out.append(f"{INDENT}DOJO_CHECK(cudaMalloc((void **)&{v}, {nbytes(d)}));")
    for d, v in vals:
        src = f"*{gen.names[d.name]}"
        if d.dtype == "bf16":
            gen.helpers.use("round_bf16")
            src = f"dojo_round_bf16({src})"
        out.append(f"{INDENT}{v} = {src};")
    for d, v in dev:
        if _kind(d) in ("in", "inout"):
            out.append(f"{INDENT}DOJO_CHECK(cudaMemcpy({v}, {gen.names[d.name]}, {nbytes(d)}, "
                       "cudaMemcpyHostToDevice));")
            if d.dtype == "bf16":
                n = _count(gen, d)
                out.append(f"{INDENT}dojo_round_bf16_kernel<<<{(n + 255) // 256}, 256>>>({v}, {n});")
                out.append(f"{INDENT}DOJO_CHECK(cudaGetLastError());")
    for d, s in inouts:
        out.append(f"{INDENT}DOJO_CHECK(cudaMemcpy({s}, dojo_d_{gen.names[d.name]}, {nbytes(d)}, "
                   "cudaMemcpyDeviceToDevice));")
    args = []
    for name in gen.globals:
        d = gen.global_decls[name]
        args.append(f"dojo_{'v' if _is_value(d) else 'd'}_{gen.names[name]}")
    call = f"dojo_launch({', '.join(args)})"
    out.append(f"{INDENT}DOJO_CHECK({call});")
    out.append(f"{INDENT}DOJO_CHECK(cudaDeviceSynchronize());")
    for d, v in dev:
        if _kind(d) in ("out", "inout"):
            out.append(f"{INDENT}DOJO_CHECK(cudaMemcpy({gen.names[d.name]}, {v}, {nbytes(d)}, "
                       "cudaMemcpyDeviceToHost));")
    out += [f"{INDENT}if (dojo_reps > 0) {{",
            f"{INDENT * 2}DOJO_CHECK(cudaEventCreate(&dojo_start));",
            f"{INDENT * 2}DOJO_CHECK(cudaEventCreate(&dojo_stop));",
            f"{INDENT}}}",
            f"{INDENT}for (dojo_r = 0; dojo_r < dojo_reps; dojo_r++) {{",
            f"{INDENT * 2}float dojo_ms = 0.0f;"]
    for d, s in inouts:
        out.append(f"{INDENT * 2}DOJO_CHECK(cudaMemcpy(dojo_d_{gen.names[d.name]}, {s}, "
                   f"{nbytes(d)}, cudaMemcpyDeviceToDevice));")
    out += [f"{INDENT * 2}DOJO_CHECK(cudaEventRecord(dojo_start));",
            f"{INDENT * 2}DOJO_CHECK({call});",
            f"{INDENT * 2}DOJO_CHECK(cudaEventRecord(dojo_stop));",
            f"{INDENT * 2}DOJO_CHECK(cudaEventSynchronize(dojo_stop));",
            f"{INDENT * 2}DOJO_CHECK(cudaEventElapsedTime(&dojo_ms, dojo_start, dojo_stop));",
            f"{INDENT * 2}if (dojo_times_ms) dojo_times_ms[dojo_r] = dojo_ms;",
            f"{INDENT}}}",
            "dojo_done:",
            f"{INDENT}if (dojo_start) cudaEventDestroy(dojo_start);",
            f"{INDENT}if (dojo_stop) cudaEventDestroy(dojo_stop);"]
    for _, v in dev + inouts:
        out.append(f"{INDENT}cudaFree({v});")
    out += [f"{INDENT}return dojo_err;", "}"]
    return out


# --------------------------------------------------------------------------- standalone

def _range(gen, name):
    try:
        from ..kernels.catalog import CATALOG, DEFAULT_RANGE
    except ImportError:       # pragma: no cover - the library is part of dojo_core
        return (-1.0, 1.0)
    entry = CATALOG.get(gen.program.name)
    return entry.range_of(name) if entry else DEFAULT_RANGE


def _main(gen) -> list:
    p = gen.program
    io = [d for d in p.arrays if d.kind != "temp"]
    outs = [d for d in p.arrays if d.kind in ("out", "inout")]
    lines = ["#ifdef DOJO_STANDALONE",
             "#include <stdio.h>",
             "#include <stdlib.h>",
             "",
             "static int dojo_cmp(const void *a, const void *b)",
             "{",
             f"{INDENT}float x = *(const float *)a, y = *(const float *)b;",
             f"{INDENT}return (x > y) - (x < y);",
             "}",
             "",
             "static int dojo_file(const char *dir, const char *name, void *data, size_t bytes, int writing)",
             "{",
             f"{INDENT}char path[4096];",
             f"{INDENT}FILE *f;",
             f"{INDENT}size_t n;",
             f"{INDENT}snprintf(path, sizeof path, \"%s/%s.bin\", dir, name);",
             f"{INDENT}f = fopen(path, writing ? \"wb\" : \"rb\");",
             f"{INDENT}if (!f) {{ fprintf(stderr, \"cannot open %s\\n\", path); return 1; }}",
             f"{INDENT}n = writing ? fwrite(data, 1, bytes, f) : fread(data, 1, bytes, f);",
             f"{INDENT}fclose(f);",
             f"{INDENT}if (n != bytes) {{ fprintf(stderr, \"%s: expected %zu bytes, got %zu\\n\", path, bytes, n); return 1; }}",
             f"{INDENT}return 0;",
             "}",
             "",
             "int main(int argc, char **argv)",
             "{",
             f"{INDENT}int dojo_reps = 20, dojo_k, dojo_err;",
             f"{INDENT}const char *dojo_in = NULL, *dojo_out = NULL;",
             f"{INDENT}float *dojo_times;",
             f"{INDENT}size_t dojo_i;"]
    for d in io:
        c = gen.names[d.name]
        lines.append(f"{INDENT}{CTYPES[d.dtype]} *{c} = ({CTYPES[d.dtype]} *)malloc("
                     f"(size_t){_count(gen, d)} * sizeof({CTYPES[d.dtype]}));")
    lines += [f"{INDENT}for (dojo_k = 1; dojo_k < argc; dojo_k++) {{",
              f"{INDENT * 2}if (!strcmp(argv[dojo_k], \"--reps\") && dojo_k + 1 < argc) dojo_reps = atoi(argv[++dojo_k]);",
              f"{INDENT * 2}else if (!strcmp(argv[dojo_k], \"--in\") && dojo_k + 1 < argc) dojo_in = argv[++dojo_k];",
              f"{INDENT * 2}else if (!strcmp(argv[dojo_k], \"--out\") && dojo_k + 1 < argc) dojo_out = argv[++dojo_k];",
              f"{INDENT * 2}else {{ fprintf(stderr, \"usage: %s [--reps N] [--in DIR] [--out DIR]\\n\", argv[0]); return 2; }}",
              f"{INDENT}}}",
              f"{INDENT}if (dojo_reps < 0) dojo_reps = 0;",
              f"{INDENT}dojo_times = (float *)malloc((size_t)(dojo_reps > 0 ? dojo_reps : 1) * sizeof(float));"]
    ok = " || ".join([f"!{gen.names[d.name]}" for d in io] + ["!dojo_times"])
    lines.append(f"{INDENT}if ({ok}) {{ fprintf(stderr, \"out of memory\\n\"); return 1; }}")
    for d in io:
        if d.kind not in ("in", "inout"):
            continue
        c, n = gen.names[d.name], _count(gen, d)
        size = f"(size_t){n} * sizeof({CTYPES[d.dtype]})"
        lo, hi = _range(gen, d.name)
        seed = 7919 * (p.arrays.index(d) + 1)
        if d.dtype in ("i32", "i64", "i8"):
            a, b = int(-(-lo // 1)), int(hi // 1)
            fill = (f"({CTYPES[d.dtype]})({a} + (long long)(((dojo_i + {seed}ull) * 2654435761ull) % "
                    f"{max(1, b - a + 1)}ull))")
        else:
            fill = (f"({CTYPES[d.dtype]})({float(lo)!r} + {float(hi - lo)!r} * "
                    f"(double)(((dojo_i + {seed}ull) * 2654435761ull) % 1000003ull) / 1000002.0)")
        lines += [f"{INDENT}if (dojo_in) {{",
                  f"{INDENT * 2}if (dojo_file(dojo_in, \"{d.name}\", {c}, {size}, 0)) return 1;",
                  f"{INDENT}}} else {{",
                  f"{INDENT * 2}for (dojo_i = 0; dojo_i < (size_t){n}; dojo_i++) {c}[dojo_i] = {fill};",
                  f"{INDENT}}}"]
    args = ", ".join([gen.names[d.name] for d in io] + ["dojo_reps", "dojo_times"])
    lines += [f"{INDENT}dojo_err = dojo_run({args});",
              f"{INDENT}if (dojo_err) {{ fprintf(stderr, \"dojo_run: CUDA error %d: %s\\n\", dojo_err, "
              "dojo_error_string(dojo_err)); return 1; }",
              f"{INDENT}qsort(dojo_times, (size_t)dojo_reps, sizeof(float), dojo_cmp);",
              f"{INDENT}printf(\"{{\\\"kernel\\\": \\\"{p.name}\\\", \\\"reps\\\": %d, \\\"median_ms\\\": %.6f, "
              "\\\"min_ms\\\": %.6f, \\\"max_ms\\\": %.6f, \\\"checksum\\\": {\", dojo_reps,",
              f"{INDENT * 2}dojo_reps ? (dojo_reps % 2 ? dojo_times[dojo_reps / 2] : 0.5f * (dojo_times[dojo_reps / 2 - 1] + dojo_times[dojo_reps / 2])) : 0.0f,",
              f"{INDENT * 2}dojo_reps ? dojo_times[0] : 0.0f, dojo_reps ? dojo_times[dojo_reps - 1] : 0.0f);"]
    for j, d in enumerate(outs):
        c, n = gen.names[d.name], _count(gen, d)
        sep = ", " if j else ""
        lines += [f"{INDENT}{{",
                  f"{INDENT * 2}double dojo_sum = 0;",
                  f"{INDENT * 2}for (dojo_i = 0; dojo_i < (size_t){n}; dojo_i++) dojo_sum += (double){c}[dojo_i];",
                  f"{INDENT * 2}printf(\"{sep}\\\"{d.name}\\\": %.17g\", dojo_sum);",
                  f"{INDENT}}}"]
    lines.append(f"{INDENT}printf(\"}}}}\\n\");")
    for d in outs:
        c, n = gen.names[d.name], _count(gen, d)
        size = f"(size_t){n} * sizeof({CTYPES[d.dtype]})"
        lines.append(f"{INDENT}if (dojo_out && dojo_file(dojo_out, \"{d.name}\", {c}, {size}, 1)) return 1;")
    for d in io:
        lines.append(f"{INDENT}free({gen.names[d.name]});")
    lines += [f"{INDENT}free(dojo_times);", f"{INDENT}return 0;", "}", "#endif /* DOJO_STANDALONE */"]
    return lines


# --------------------------------------------------------------------------- assembly

def assemble(gen, device: list, host: str) -> str:
    p = gen.program
    sizes = ", ".join(f"{n} = {v}" for n, v in p.sizes)
    head = [f"/* PerfDojo: kernel {p.name}({sizes}) -- CUDA, generated; "
            "nvcc -O3 -arch=sm_90 [-DDOJO_STANDALONE] */",
            "#include <cuda_runtime.h>",
            "#include <math.h>",
            "#include <string.h>",
            ""]
    if p.sizes:
        consts = ", ".join(f"{gen.names[n]} = {literal(v, 'i32')[0]}" for n, v in p.sizes)
        head += [f"enum {{ {consts} }};  /* the sizes */", ""]
    helpers = gen.helpers.text()
    parts = ["\n".join(head)]
    if helpers:
        parts.append("\n\n".join(helpers) + "\n")
    parts += [d + "\n" for d in device]
    parts.append(host + "\n")
    return "\n".join(parts)


__all__ = ["host_code", "assemble"]
