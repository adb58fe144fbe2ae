"""The build files of a library: a Makefile and a CMakeLists.txt, and its README.

Both build ``libperfdojo.a`` and ``libperfdojo.so`` from the same objects, each source
compiled with the flags recorded when its kernel was measured (plus ``-fPIC``), and the C
test program ``perfdojo_test`` linked against the static library; ``make check`` (``ctest``)
runs it.  Link flags are the union of the recorded ones (``-fopenmp`` whenever a source is
compiled with it).  The test program is compiled with ``-ffp-contract=off`` so that its
input generator rounds exactly like numpy's.
"""
from __future__ import annotations

from ..compile import find_compiler


def _link_flags(functions) -> list:
    flags = []
    for fn in functions:
        if "-fopenmp" in fn.cflags:
            flags.append("-fopenmp")
        flags += list(fn.ldflags)
    flags.append("-lm")
    return list(dict.fromkeys(flags))


def _var(name: str) -> str:
    return "CFLAGS_" + name.upper()


def makefile(functions) -> str:
    names = [fn.name for fn in functions]
    objs = " ".join(f"obj/{n}.o" for n in names + ["perfdojo_common"])
    common_flags = ["-O2", "-std=gnu11"] + (["-fopenmp"] if any("-fopenmp" in f.cflags for f in functions) else [])
    lines = ["# PerfDojo kernel library: `make` builds libperfdojo.a, libperfdojo.so and perfdojo_test;",
             "# `make check` runs the test program.  Each source keeps the flags it was measured with.",
             f"CC ?= {_default_cc()}", "AR ?= ar",
             f"LDLIBS = {' '.join(_link_flags(functions))}",
             f"CFLAGS_COMMON = {' '.join(common_flags)}", ""]
    for fn in functions:
        lines.append(f"{_var(fn.name)} = {' '.join(fn.cflags)}")
    lines += ["", f"OBJS = {objs}", "",
              ".PHONY: all check clean", "",
              "all: libperfdojo.a libperfdojo.so perfdojo_test", ""]
    for fn in functions:
        lines += [f"obj/{fn.name}.o: src/{fn.name}.c perfdojo.h", "\t@mkdir -p obj",
                  f"\t$(CC) $({_var(fn.name)}) -fPIC -I. -c src/{fn.name}.c -o $@", ""]
    lines += ["obj/perfdojo_common.o: src/perfdojo_common.c", "\t@mkdir -p obj",
              "\t$(CC) $(CFLAGS_COMMON) -fPIC -c src/perfdojo_common.c -o $@", "",
              "libperfdojo.a: $(OBJS)", "\t$(AR) rcs $@ $(OBJS)", "",
              "libperfdojo.so: $(OBJS)", "\t$(CC) -shared -o $@ $(OBJS) $(LDLIBS)", "",
              "perfdojo_test: test/perfdojo_test.c perfdojo.h libperfdojo.a",
              "\t$(CC) $(CFLAGS_COMMON) -ffp-contract=off -I. -o $@ test/perfdojo_test.c "
              "libperfdojo.a $(LDLIBS)", "",
              "check: perfdojo_test", "\t./perfdojo_test", "",
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


def cmakelists(functions) -> str:
    lines = ["# PerfDojo kernel library (the same build as the Makefile).",
             "cmake_minimum_required(VERSION 3.13)", "project(perfdojo C)", "",
             "set(PERFDOJO_SOURCES"] + [f"  src/{fn.name}.c" for fn in functions] + \
            ["  src/perfdojo_common.c)", ""]
    for fn in functions:
        lines.append(f'set_source_files_properties(src/{fn.name}.c PROPERTIES COMPILE_OPTIONS '
                     f'"{_cmake_list(fn.cflags)}")')
    link = _link_flags(functions)
    lines += ['set_source_files_properties(src/perfdojo_common.c PROPERTIES COMPILE_OPTIONS '
              f'"{_cmake_list(["-O2"] + (["-fopenmp"] if "-fopenmp" in link else []))}")', "",
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
        kind = ("tuned, %d steps" % len(fn.steps)) if fn.tuned else "untransformed"
        sp = f", {fn.speedup:.2f}x" if fn.speedup else ""
        rows.append(f"| `{fn.name}` | {kind}{sp} |")
    return "\n".join([
        f"# PerfDojo kernel library ({target_label})", "",
        "```sh", "make            # libperfdojo.a, libperfdojo.so, perfdojo_test",
        "make check      # every function against stored reference outputs", "```", "",
        "Or `cmake -B build && cmake --build build && (cd build && ctest)`.",
        "From Python: `dojo_core.library.load(DIR)` (numpy arrays, shape and dtype checked).",
        "`perfdojo.h` documents every function; `provenance/NAME.json` says where it comes from.", "",
        "| function | kernel |", "|---|---|", *rows, ""])
