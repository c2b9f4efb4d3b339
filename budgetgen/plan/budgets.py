"""Budgets: per plan month the plan against the budget of the whole plan and of each cost center. No I/O.

The Python view of the Budgets sheet, computed with the `rules` the sheet writes as formulas. The whole plan's
budget is held against each month's total (GPU, commitments, extras, buffer); a cost center's against the GPU cost
of its tasks in the month (what Monthly holds for them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import rules


@dataclass(frozen=True)
class Budget:
    """One Budgets row: a cost center ("" for the whole plan) and its budget a month."""

    cost_center: str
    monthly_budget: float
    row: int = 0
    source: str = ""


@dataclass(frozen=True)
class BudgetLine:
    """One budget against the plan, month by month."""

    budget: Budget
    planned: tuple[float, ...]
    over: tuple[bool, ...]
    over_by: tuple[float, ...]  # each month's plan above the budget (rules.OVER_BUDGET_BY; 0: within)

    @property
    def label(self) -> str:
        return self.budget.cost_center

    @property
    def overrun(self) -> float:
        """The months' planned amounts above the budget, summed (0: within budget every month)."""
        return math.fsum(self.over_by)


def plan_budgets(plan) -> tuple[BudgetLine, ...]:
    """Every Budgets row against the plan's months."""
    s = plan.inputs.settings
    out = []
    for b in plan.inputs.budgets:
        if b.cost_center:
            planned = tuple(math.fsum(tp.cost_in(i) for tp in plan.tasks
                                      if tp.task.values["cost_center"] == b.cost_center)
                            for i in range(1, len(plan.months) + 1))
        else:
            planned = tuple(plan.month_totals[m].total for m in plan.months)
        out.append(BudgetLine(b, planned, tuple(rules.OVER_BUDGET(s, planned=p, budget=b.monthly_budget)
                                                for p in planned),
                              tuple(float(rules.OVER_BUDGET_BY(s, planned=p, budget=b.monthly_budget)) for p in planned)))
    return tuple(out)


def over_budget(lines: tuple[BudgetLine, ...]) -> list[tuple[str, str]]:
    """(cost center or "", month #) of every month over its budget."""
    return [(line.label, str(j + 1)) for line in lines for j, o in enumerate(line.over) if o]
