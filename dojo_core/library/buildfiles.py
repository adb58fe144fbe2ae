"""The build files of a library: a Makefile and a CMakeLists.txt, and its README.

Both build ``libperfdojo.a`` and ``libperfdojo.so`` from the same objects, each source
compiled with the flags recorded when its kernel was measured (plus ``-fPIC``), and the C
test program ``perfdojo_test`` linked against the static library; ``make check`` (``ctest``)
runs it.  Link flags are the union of the recorded ones (``-fopenmp`` whenever a source is
compiled with it).  The test program is compiled with ``-ffp-contract=off`` so that its
input generator rounds exactly like numpy's.

A library for a foreign ISA (its functions' target has a ``cross`` route: arm-neon, arm-sve,
riscv-rvv on x86) is cross-compiled: ``CC`` is the route's compiler (not overridable by the
environment, only on make's command line), every source keeps the route's flags, and
``make check`` (``ctest``) runs the test program under the route's emulator (``EMULATOR``).
Where the route is clang's (riscv-rvv), ``src/perfdojo_kmpc.c`` (``cross.KMPC_SHIM``) joins
the objects and links over the cross libgomp, never with ``-fopenmp`` (clang would ask for a
libomp that the cross sysroot lacks).
"""
from __future__ import annotations

from ..codegen.targets import is_foreign
from ..compile import find_compiler


def library_isa(functions):
    """The Target every function is generated for, or None when they differ (or no function)."""
    names = {fn.target.name for fn in functions}
    return functions[0].target if len(names) == 1 else None


def _cross(functions):
    """The foreign Target of a cross-compiled library, or None for a native one."""
    isa = library_isa(functions)
    return isa if isa is not None and isa.cross is not None and is_foreign(isa) else None


def _shim(functions) -> bool:
    isa = _cross(functions)
    return isa is not None and isa.cross.openmp == "kmpc-shim"


def cross_ar(isa) -> str:
    """The archiver of a cross route: ``TRIPLE-ar`` (the triple from the compiler's name or
    its ``--target=``), else ``ar``."""
    import shutil
    cc = list(isa.cross.cc)
    triple = next((a.split("=", 1)[1] for a in cc[1:] if a.startswith("--target=")), None)
    if triple is None and cc[0].endswith("-gcc"):
        triple = cc[0][:-len("-gcc")]
    return f"{triple}-ar" if triple and shutil.which(f"{triple}-ar") else "ar"


def cross_info(isa) -> dict | None:
    """The cross toolchain of a library for a foreign ISA ({"cc", "emulator", "packages"}),
    None for a native one."""
    if isa is None or isa.cross is None or not is_foreign(isa):
        return None
    return {"cc": " ".join(isa.cross.cc), "emulator": " ".join(isa.cross.emulator),
            "packages": isa.cross.packages}


def _link_flags(functions) -> list:
    flags = []
    shim = _shim(functions)
    for fn in functions:
        if "-fopenmp" in fn.cflags and not shim:
            flags.append("-fopenmp")
        flags += list(fn.ldflags)
    flags.append("-lm")
    return list(dict.fromkeys(flags))


def _var(name: str) -> str:
    return "CFLAGS_" + name.upper()


def makefile(functions) -> str:
    names = [fn.name for fn in functions]
    shim = _shim(functions)
    objs = " ".join(f"obj/{n}.o" for n in names + ["perfdojo_common"] + (["perfdojo_kmpc"] if shim else []))
    openmp = "-fopenmp" if any("-fopenmp" in f.cflags for f in functions) else ""
    common_flags = ["-O2", "-std=gnu11"]
    isa = _cross(functions)
    if isa is not None:
        head = [f"# Cross-compiled for {isa.name} ({isa.arch}); `make check` runs the tests under "
                f"{isa.cross.emulator[0]}", f"# (Debian packages: {isa.cross.packages}).",
                f"CC = {' '.join(isa.cross.cc)}", f"AR = {cross_ar(isa)}",
                f"EMULATOR = {' '.join(isa.cross.emulator)}"]
    else:
        head = [f"CC ?= {_default_cc()}", "AR ?= ar", "EMULATOR ="]
    lines = ["# PerfDojo kernel library: `make` builds libperfdojo.a, libperfdojo.so and perfdojo_test;",
             "# `make check` runs the test program.  Each source keeps the flags it was measured with.",
             *head,
             f"LDLIBS = {' '.join(_link_flags(functions))}",
             f"CFLAGS_COMMON = {' '.join(common_flags)}",
             f"OPENMP = {openmp if not shim else ''}", ""]
    for fn in functions:
        lines.append(f"{_var(fn.name)} = {' '.join(fn.cflags)}")
    lines += ["", f"OBJS = {objs}", "",
              ".PHONY: all check clean", "",
              "all: libperfdojo.a libperfdojo.so perfdojo_test", ""]
    for fn in functions:
        lines += [f"obj/{fn.name}.o: src/{fn.name}.c perfdojo.h", "\t@mkdir -p obj",
                  f"\t$(CC) $({_var(fn.name)}) -fPIC -I. -c src/{fn.name}.c -o $@", ""]
    if shim:
        lines += ["obj/perfdojo_kmpc.o: src/perfdojo_kmpc.c", "\t@mkdir -p obj",
                  "\t$(CC) $(CFLAGS_COMMON) -fPIC -c src/perfdojo_kmpc.c -o $@", ""]
    lines += ["obj/perfdojo_common.o: src/perfdojo_common.c", "\t@mkdir -p obj",
              f"\t$(CC) $(CFLAGS_COMMON) {openmp} -fPIC -c src/perfdojo_common.c -o $@".replace("  ", " "), "",
              "libperfdojo.a: $(OBJS)", "\t$(AR) rcs $@ $(OBJS)", "",
              "libperfdojo.so: $(OBJS)", "\t$(CC) -shared -o $@ $(OBJS) $(LDLIBS)", "",
              "perfdojo_test: test/perfdojo_test.c perfdojo.h libperfdojo.a",
              "\t$(CC) $(CFLAGS_COMMON) $(OPENMP) -ffp-contract=off -I. -o $@ test/perfdojo_test.c "
              "libperfdojo.a $(LDLIBS)", "",
              "check: perfdojo_test", "\t$(EMULATOR) ./perfdojo_test", "",
              "clean:", "\trm -rf obj libperfdojo.a libperfdojo.so perfdojo_test", ""]
    return "\n".join(lines)


def _default_cc() -> str:
    try:
        import os
        return os.path.basename(find_compiler())
    except Exception:                                                 # noqa: BLE001
        return "cc"


def _cmake_list(flags) -> str:
    return ";".join(flags)


def _cmake_cross(isa) -> list:
    cc = list(isa.cross.cc)
    lines = ["set(CMAKE_SYSTEM_NAME Linux)", f"set(CMAKE_SYSTEM_PROCESSOR {isa.arch})",
             f"set(CMAKE_C_COMPILER {cc[0]})"]
    target = next((a.split("=", 1)[1] for a in cc[1:] if a.startswith("--target=")), None)
    if target:
        lines.append(f"set(CMAKE_C_COMPILER_TARGET {target})")
    lines.append(f'set(CMAKE_CROSSCOMPILING_EMULATOR "{";".join(isa.cross.emulator)}")')
    return lines


def cmakelists(functions) -> str:
    isa, shim = _cross(functions), _shim(functions)
    cross = _cmake_cross(isa) if isa is not None else []
    lines = ["# PerfDojo kernel library (the same build as the Makefile).",
             "cmake_minimum_required(VERSION 3.13)", *cross, "project(perfdojo C)", "",
             "set(PERFDOJO_SOURCES"] + [f"  src/{fn.name}.c" for fn in functions] + \
            (["  src/perfdojo_kmpc.c"] if shim else []) + ["  src/perfdojo_common.c)", ""]
    for fn in functions:
        lines.append(f'set_source_files_properties(src/{fn.name}.c PROPERTIES COMPILE_OPTIONS '
                     f'"{_cmake_list(fn.cflags)}")')
    link = _link_flags(functions)
    openmp = any("-fopenmp" in f.cflags for f in functions)
    lines += ['set_source_files_properties(src/perfdojo_common.c PROPERTIES COMPILE_OPTIONS '
              f'"{_cmake_list(["-O2"] + (["-fopenmp"] if openmp else []))}")', "",
              "add_library(perfdojo_objects OBJECT ${PERFDOJO_SOURCES})",
              "set_property(TARGET perfdojo_objects PROPERTY POSITION_INDEPENDENT_CODE ON)",
              "target_include_directories(perfdojo_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})", "",
              "add_library(perfdojo_static STATIC $<TARGET_OBJECTS:perfdojo_objects>)",
              "add_library(perfdojo_shared SHARED $<TARGET_OBJECTS:perfdojo_objects>)",
              "set_target_properties(perfdojo_static perfdojo_shared PROPERTIES OUTPUT_NAME perfdojo)",
              f"target_link_libraries(perfdojo_static PUBLIC {' '.join(link)})",
              f"target_link_libraries(perfdojo_shared PRIVATE {' '.join(link)})",
              "target_include_directories(perfdojo_static PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})", "",
              "add_executable(perfdojo_test test/perfdojo_test.c)",
              'target_compile_options(perfdojo_test PRIVATE "-ffp-contract=off")',
              "target_link_libraries(perfdojo_test perfdojo_static)",
              "enable_testing()", "add_test(NAME perfdojo_test COMMAND perfdojo_test)", ""]
    return "\n".join(lines)


def readme(functions, target_label: str) -> str:
    rows = []
    for fn in functions:
        kind = (f"{fn.schedule}, {len(fn.steps)} steps, not measured" if fn.source == "steps"
                else ("tuned, %d steps" % len(fn.steps)) if fn.tuned else "untransformed")
        sp = f", {fn.speedup:.2f}x" if fn.speedup else ""
        rows.append(f"| `{fn.name}` | {kind}{sp} |")
    return "\n".join([
        f"# PerfDojo kernel library ({target_label})", "",
        "```sh", "make            # libperfdojo.a, libperfdojo.so, perfdojo_test",
        "make check      # every function against stored reference outputs", "```", "",
        *([f"Cross-compiled for {_cross(functions).name}: `make check` runs the tests under "
           f"`{_cross(functions).cross.emulator[0]}` (Debian: {_cross(functions).cross.packages}).", ""]
          if _cross(functions) is not None else []),
        "Or `cmake -B build && cmake --build build && (cd build && ctest)`.",
        "From Python: `dojo_core.library.load(DIR)` (numpy arrays, shape and dtype checked).",
        "`perfdojo.h` documents every function; `provenance/NAME.json` says where it comes from.", "",
        "| function | kernel |", "|---|---|", *rows, ""])
