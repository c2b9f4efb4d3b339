"""Files in and out: the input workbook read safely into Inputs, the `init` template, the generated input
reference, and the plan as JSON."""
