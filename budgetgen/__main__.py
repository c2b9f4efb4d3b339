"""`python -m budgetgen` runs the command line."""

from .cli import main

main(prog_name="budgetgen")
