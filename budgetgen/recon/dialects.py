"""The SQL dialects `bill-sql` writes the bill's grouping in, and the table it reads by default: apart from bill_sql
(which needs DuckDB and the bill engine) so that the CLI names them without loading either."""

DIALECTS = ("duckdb", "spark", "bigquery", "athena")
DEFAULT_TABLE = "focus_bill"
