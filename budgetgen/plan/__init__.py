"""The plan, computed once: per task the card, cards, hours and cost; commitments, the Order, the checks,
budgets, scenarios and ramps (no I/O); and what changed between two plans (diff, which reads the two files)."""
