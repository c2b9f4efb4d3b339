"""budgetgen: turn an inventory of AI workloads into a GPU budget workbook.

From Python:

    import budgetgen
    result = budgetgen.build_budget("inputs/q3.xlsx", "outputs/q3-budget.xlsx", json_path="outputs/q3.json")
    print(result.plan.period_total, result.workbook)
"""

__version__ = "0.1.0"

from .api import Result, build_budget  # after __version__, which the writer reads
from .engine import Plan, plan_budget
from .errors import BudgetgenError, InputError, OutputError
from .reader import read_inputs

__all__ = ["BudgetgenError", "InputError", "OutputError", "Plan", "Result", "__version__", "build_budget",
           "plan_budget", "read_inputs"]
