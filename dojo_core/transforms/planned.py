"""The shape shared by the transformations that buffer an array's footprint in one loop
(``stage``, ``accumulate``): a plan, or the one-sentence reason there is none, computed from
the affine footprint and, when only islpy can tell, again with islpy; then the result built
from the plan and re-checked, or the reason the checker gives.  Plans are cached per program
(``scope.CACHE``) under ``(plan_key, array, loop, use_isl)``.  ``first_written`` is the
proof both use to leave out loading a buffer that the region overwrites before reading;
``first_checked`` builds the result with and without that load where the plan leaves it to
the checker."""
from __future__ import annotations

from math import prod

from .. import ir
from ..checker import check as check_program
from ..deps import dependences, same
from ..poly import const_value
from . import footprint as fp
from . import scope
from .base import NotApplicable, Transformation


class PlannedTransformation(Transformation):
    """``NAME ARRAY at LOOP as BUFFER [in SPACE]``: params (array, loop, buffer, space or
    None).  Subclasses set ``plan_key``, ``spaces`` and ``whole_loop`` (the footprint of
    all of the loop's iterations, else of one iteration) and implement ``_compute_at``
    (a plan: a dict with at least ``loop``, ``path``, ``decl`` and ``box``, or a reason),
    ``_build_checked(program, params, plan)`` (a program or a reason), ``_needs_proof(plan)``,
    ``_arrays(loop)`` and ``_default_name(program, array)``."""

    grammar = "ARRAY at LOOP as NAME"
    plan_key = ""
    spaces: tuple = ()
    whole_loop = False

    @property
    def usage(self) -> str:
        return f"{self.name} {self.grammar} [in {'|'.join(self.spaces)}]"

    def parse(self, words):
        """(array, loop, buffer, space or None) from the grammar's words and, optionally,
        ``in SPACE`` with SPACE one of ``spaces``."""
        if len(words) not in (5, 7):
            raise self.usage_error()
        array, loop, name = super().parse(words[:5])
        space = None
        if len(words) == 7:
            if words[5] != "in" or words[6] not in self.spaces:
                raise self.usage_error(f"unknown memory space '{' '.join(words[5:])}'")
            space = words[6]
        return array, loop, name, space

    def format(self, params):
        space = params[3]
        return super().format(tuple(params[:3])) + (f" in {space}" if space else "")

    @staticmethod
    def located(program, array: str, loop_name: str):
        """(loop, its path, the loops around it, the declaration of ``array`` visible
        there), or the reason there is no such loop or array."""
        if loop_name not in scope.loop_table(program):
            return f"there is no loop '{loop_name}'"
        loop, path, around = scope.loop_table(program)[loop_name]
        decl = scope.visible_decl(program, path, array)
        if decl is None:
            return f"there is no array or local '{array}' visible at loop '{loop_name}'"
        return loop, path, around, decl

    def _compute(self, program, array, loop_name, use_isl):
        """The plan or a reason: the loop and the array located, their footprint's
        references gathered, the rest left to ``_compute_at``."""
        found = self.located(program, array, loop_name)
        if isinstance(found, str):
            return found
        refs = fp.loop_refs(program, loop_name, array, self.whole_loop)
        return self._compute_at(program, array, loop_name, use_isl, found, refs)

    def _compute_at(self, program, array, loop_name, use_isl, found, refs):
        """``found``: what ``located`` gives; ``refs``: the footprint's references."""
        raise NotImplementedError

    def _build_checked(self, program, params, plan):
        raise NotImplementedError

    def _needs_proof(self, plan) -> bool:
        """Must the checker prove, on the result, that every element read is initialised?"""
        raise NotImplementedError

    def _arrays(self, loop) -> list:
        """The arrays worth trying at ``loop``, in a deterministic order."""
        raise NotImplementedError

    def _space_problem(self, program, plan, space):
        """Why the buffer may not live in ``space`` here, or None."""
        return None

    def _worth_it(self, box_size: int, whole: int, nested: bool) -> bool:
        """Is a buffer of ``box_size`` elements (of ``whole``) worth enumerating?"""
        return box_size < whole or nested

    def _default_name(self, program, array: str) -> str:
        raise NotImplementedError

    def _result(self, program, params, plan):
        """The transformed program or the checker's reason, cached per program and params."""
        return scope.CACHE.get(program, (f"{self.plan_key}-result",) + tuple(params),
                               lambda: self._build_checked(program, params, plan))

    def check(self, program, params):
        """None when the step applies: a plan exists, the buffer's name is free, the buffer
        fits its space, and, where the plan alone does not prove it, the checker accepts
        the result; else the first reason in that order."""
        array, loop_name, name, space = params
        plan = self._plan(program, array, loop_name)
        if isinstance(plan, str):
            return plan
        problem = scope.name_problem(program, name)
        if problem:
            return problem
        size = plan["box"].size
        if size > fp.MAX_ELEMENTS:
            return (f"the footprint of '{array}' in '{loop_name}' has {size} elements, more "
                    f"than the {fp.MAX_ELEMENTS} a local buffer may hold")
        if space == "register" and size > fp.MAX_REGISTER:
            return (f"the footprint of '{array}' in '{loop_name}' has {size} elements, more "
                    f"than the {fp.MAX_REGISTER} that fit in registers")
        problem = self._space_problem(program, plan, space)
        if problem:
            return problem
        if self._needs_proof(plan) or not plan["box"].exact:
            result = self._result(program, params, plan)
            if isinstance(result, str):
                return result
        return None

    def candidates(self, program):
        """Per loop, per array of ``_arrays``: the buffer with the default name when the
        plan needs no proof and the buffer is worth it and fits, and again ``in register``
        when it fits there."""
        sizes = program.size_values
        for loop, _, around in scope.loop_table(program).values():
            for array in self._arrays(loop):
                plan = self._plan(program, array, loop.iterator, use_isl=False)
                if isinstance(plan, str) or self._needs_proof(plan):
                    continue
                size = plan["box"].size
                whole = prod(const_value(d, sizes) for d in plan["decl"].dims)
                if not self._worth_it(size, whole, bool(around)) or size > fp.MAX_ELEMENTS:
                    continue
                name = self._default_name(program, array)
                yield array, loop.iterator, name, None
                if size <= fp.MAX_REGISTER:
                    yield array, loop.iterator, name, "register"

    def _plan(self, program, array, loop_name, use_isl=True):
        """The plan or a reason (independent of the buffer's name and space); islpy is
        tried (``use_isl``) only when the affine forms alone say it is needed."""
        plan = scope.CACHE.get(program, (self.plan_key, array, loop_name, False),
                               lambda: self._compute(program, array, loop_name, False))
        if use_isl and isinstance(plan, str) and plan.endswith(f"({fp.NEEDS_ISL})"):
            plan = scope.CACHE.get(program, (self.plan_key, array, loop_name, True),
                                   lambda: self._compute(program, array, loop_name, True))
        return plan

    def apply(self, program, params):
        plan = self._plan(program, params[0], params[1])
        if isinstance(plan, str):
            raise NotApplicable(plan)
        result = self._result(program, params, plan)
        if isinstance(result, str):
            raise NotApplicable(result)
        return result


def first_written(program, refs, box, array: str, fixed: list) -> bool:
    """Is every element of the box written with '=' in the region before the region touches
    it otherwise, within one iteration of the loops named in ``fixed`` (those around the
    region)?  True when an '=' statement S whose access alone covers the box and whose value
    does not read the array is preceded by no other statement of the region on the same
    element: shown syntactically (every other access uses S's index text and comes textually
    later, so it follows S's write of that very element), else by exact dependences."""
    index = scope.assignment_index(program)
    for k in box.covering:
        ref = refs[k]
        if not ref.write or ref.stmt.op != "=" or any(
                isinstance(a, ir.Access) and a.array == array for a in ir.walk_expr(ref.stmt.value)):
            continue
        others = [r for r in refs if r.stmt is not ref.stmt]
        me = index[id(ref.stmt)]
        if all(r.access.indices == ref.access.indices and index[id(r.stmt)] > me
               for r in others):
            return True
        deps = dependences(program)
        sts = deps.statements
        cond = same(fixed)
        sources = [sts[i] for i in dict.fromkeys(index[id(r.stmt)] for r in others)]
        if not deps.exists(sources, [sts[me]], lambda s, t: cond):
            return True
    return False


def first_checked(build, load):
    """(program, []) for the first of ``build(False)``, ``build(True)`` that the checker
    accepts when ``load`` is None, else for ``build(load)``; (None, the last build's
    errors) when it accepts none."""
    errors = []
    for attempt in ([load] if load is not None else [False, True]):
        new = build(attempt)
        errors = check_program(new)
        if not errors:
            return new, []
    return None, errors
