"""The shape shared by the transformations that buffer an array's footprint in one loop
(``stage``, ``accumulate``): a plan, or the one-sentence reason there is none, computed from
the affine footprint and, when only islpy can tell, again with islpy; then the result built
from the plan and re-checked, or the reason the checker gives.  Plans are cached per program
(``scope.CACHE``) under ``(plan_key, array, loop, use_isl)``."""
from __future__ import annotations

from . import footprint as fp
from . import scope
from .base import NotApplicable, Transformation


class PlannedTransformation(Transformation):
    """``NAME ARRAY at LOOP as BUFFER [in SPACE]``: params (array, loop, buffer, space or
    None).  Subclasses set ``plan_key`` and ``spaces`` and implement ``_compute(program,
    array, loop_name, use_isl)`` (a plan or a reason) and ``_result(program, params, plan)``
    (a program or a reason)."""

    plan_key = ""
    spaces: tuple = ()

    def parse(self, words):
        if len(words) not in (5, 7) or words[1] != "at" or words[3] != "as":
            raise self.usage_error()
        space = None
        if len(words) == 7:
            if words[5] != "in" or words[6] not in self.spaces:
                raise self.usage_error(f"unknown memory space '{' '.join(words[5:])}'")
            space = words[6]
        return words[0], words[2], words[4], space

    def format(self, params):
        array, loop, name, space = params
        return f"{self.name} {array} at {loop} as {name}" + (f" in {space}" if space else "")

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
        raise NotImplementedError

    def _result(self, program, params, plan):
        raise NotImplementedError

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
