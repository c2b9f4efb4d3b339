"""The calculation model: each quantity one Excel expression (expr compiles it into its Python view), the
Tasks/Candidates columns, the workbook's rules, the serving and training formulas, and calibrate."""
