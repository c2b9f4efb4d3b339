"""budgetgen: turn an inventory of AI workloads into a GPU budget workbook.

From Python:

    import budgetgen
    result = budgetgen.build_budget("inputs/q3.xlsx", "outputs/q3-budget.xlsx", json_path="outputs/q3.json")
    print(result.plan.period_total, result.workbook)
"""

__version__ = "0.1.0"

# The public names load on first use (PEP 562), so that `budgetgen.core.records` can be imported, and a record added,
# before the modules that derive from the records are imported.
_PUBLIC = {"Result": "api", "build_budget": "api", "Plan": "plan.engine", "plan_budget": "plan.engine",
           "BudgetgenError": "core.errors", "InputError": "core.errors", "OutputError": "core.errors",
           "read_inputs": "io.reader"}

__all__ = ["BudgetgenError", "InputError", "OutputError", "Plan", "Result", "__version__", "build_budget",
           "plan_budget", "read_inputs"]


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
