"""budgetgen: turn an inventory of AI workloads into a GPU budget workbook."""

__version__ = "0.1.0"
