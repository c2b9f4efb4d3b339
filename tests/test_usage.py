"""Reading GPU usage: monthly rows, raw samples, nvidia-smi CSV, and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from budgetgen.core.errors import Code, InputError
from budgetgen.recon import USAGE_COLUMNS, read_usage

pytestmark = pytest.mark.filterwarnings("error")

MIB_GB = 1048576 / 1e9
NVIDIA_SMI = (
    "timestamp, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
    "2026/07/03 10:00:00.123, NVIDIA A100-SXM4-80GB, 40 %, 1234 MiB, 81920 MiB\n"
    "2026/07/03 10:00:05.123, NVIDIA A100-SXM4-80GB, 50 %, 2000 MiB, 81920 MiB\n"
    "2026/08/01 00:00:00.000, NVIDIA A100-SXM4-80GB, 7 %, [N/A], 81920 MiB\n"
)


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts, NaN as None, for exact comparisons."""
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]


def test_usage_sheet_monthly_rows_pass_through():
    sheet = pd.DataFrame({
        "resource_id": ["i-a", "i-a", "i-b"], "month": ["2026-07", "2026-08", "2026-07"],
        "gpu_util_pct": [60, "15%", 10.5], "mem_used_gb": [20, 18, 4], "oom_events": [0, None, 2],
    }, index=[2, 3, 4])
    usage = read_usage(sheet, "Usage")
    assert tuple(usage.columns) == USAGE_COLUMNS
    assert records(usage) == [
        {"resource_id": "i-a", "month": "2026-07", "avg_util_pct": 60.0, "mem_avg_gb": 20.0, "mem_peak_gb": 20.0,
         "mem_total_gb": None, "oom_events": 0.0},
        {"resource_id": "i-a", "month": "2026-08", "avg_util_pct": 15.0, "mem_avg_gb": 18.0, "mem_peak_gb": 18.0,
         "mem_total_gb": None, "oom_events": None},
        {"resource_id": "i-b", "month": "2026-07", "avg_util_pct": 10.5, "mem_avg_gb": 4.0, "mem_peak_gb": 4.0,
         "mem_total_gb": None, "oom_events": 2.0},
    ]


def test_raw_samples_are_averaged_per_month(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text(
        "resource_id,timestamp,gpu_util_pct,mem_used_gb,mem_total_gb,oom_events\n"
        "i-a,2026-07-01T00:00:00Z,10,20,24,2\n"
        "i-a,2026-07-31T23:59:59Z,30,22,24,3\n"
        "i-a,2026-08-01 00:00:00,50,8,24,NULL\n"
    )
    usage = read_usage(path, path.name)
    assert records(usage) == [
        {"resource_id": "i-a", "month": "2026-07", "avg_util_pct": (10 + 30) / 2, "mem_avg_gb": (20 + 22) / 2,
         "mem_peak_gb": 22.0, "mem_total_gb": 24.0, "oom_events": 2.0 + 3.0},
        {"resource_id": "i-a", "month": "2026-08", "avg_util_pct": 50.0, "mem_avg_gb": 8.0, "mem_peak_gb": 8.0,
         "mem_total_gb": 24.0, "oom_events": None},
    ]


def test_nvidia_smi_csv_takes_its_id_from_the_file_name(tmp_path):
    path = tmp_path / "i-0abc123.csv"
    path.write_text(NVIDIA_SMI)
    july, august = records(read_usage(path, path.name))
    assert july == {
        "resource_id": "i-0abc123", "month": "2026-07", "avg_util_pct": pytest.approx(45.0),
        "mem_avg_gb": pytest.approx((1234 + 2000) / 2 * MIB_GB), "mem_peak_gb": pytest.approx(2000 * MIB_GB),
        "mem_total_gb": pytest.approx(81920 * MIB_GB), "oom_events": None,
    }
    assert (august["month"], august["avg_util_pct"], august["mem_peak_gb"]) == ("2026-08", 7.0, None)


def test_usage_sheet_needs_resource_id():
    sheet = pd.DataFrame({"month": ["2026-07"], "gpu_util_pct": [5], "mem_used_gb": [1]}, index=[2])
    with pytest.raises(InputError) as caught:
        read_usage(sheet, "Usage")
    problem, = caught.value.problems
    assert (problem.code, problem.sheet) == (Code.MISSING_COLUMN, "Usage")
    assert "resource_id" in problem.message


def test_usage_without_utilisation_or_month(tmp_path):
    path = tmp_path / "i-x.csv"
    path.write_text("mem_used_gb\n1\n")
    with pytest.raises(InputError) as caught:
        read_usage(path, path.name)
    messages = [p.message for p in caught.value.problems]
    assert {p.code for p in caught.value.problems} == {Code.MISSING_COLUMN}
    assert any("gpu_util_pct" in m for m in messages) and any("month or timestamp" in m for m in messages)


def test_bad_usage_values_name_their_cells():
    sheet = pd.DataFrame({
        "resource_id": ["i-a", "i-a", None], "month": ["2026-07", "2026-13", "2026-07"],
        "gpu_util_pct": ["high", 150, 20], "mem_used_gb": [1, 2, 3],
    }, index=[2, 3, 4])
    with pytest.raises(InputError) as caught:
        read_usage(sheet, "Usage")
    found = [(p.code, p.cell) for p in caught.value.problems]
    assert found == [
        (Code.NOT_A_NUMBER, "C2"), (Code.BAD_MONTH, "B3"), (Code.OUT_OF_RANGE, "C3"), (Code.REQUIRED, "A4"),
    ]


def test_usage_file_names_rows(tmp_path: Path):
    path = tmp_path / "i-y.csv"
    path.write_text(NVIDIA_SMI.replace("50 %", "fifty %"))
    with pytest.raises(InputError) as caught:
        read_usage(path, path.name)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.NOT_A_NUMBER, "i-y.csv", "row 3")
