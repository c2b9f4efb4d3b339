"""The plan as machine-readable results (§6): numbers unrounded, null where a field does not apply."""

from __future__ import annotations

import math

from ..core.inputs import Gpu
from ..core.schema import CONSTANT_VALUES, TIER_NAMES
from ..plan.checks import Check
from ..plan.engine import Plan, TaskPlan

HOURS_PER_DAY = CONSTANT_VALUES["HoursPerDay"]

TASK_FIELDS = ("cards_min", "vram_gb", "flops_per_run", "compute_hours", "compute_gpu_hours", "gpu_hours_per_run",
               "gpu_hours_per_month", "tokens_per_day", "card_days", "replicas", "monthly_cost", "cheapest_tier",
               "cards_per_run", "wall_hours_per_run")
# Calculation model v2 (SPEC-models §G): JSON key -> Tasks column.
SERVING_FIELDS = {"active_params_b": "active_used", "prompt_tokens": "prompt_used", "context_tokens": "context_used",
                  "kv_bytes_per_token": "kv_bytes_per_token", "batch_used": "batch",
                  "requests_per_sec": "requests_per_sec", "tokens_per_sec_used": "tokens_per_sec_used",
                  "user_tokens_per_sec": "user_tokens_per_sec"}


def task_json(tp: TaskPlan, months: tuple[str, ...], gpu: Gpu) -> dict:
    """One task's §6 record; `gpu` its chosen catalog GPU (whose offer prices it)."""
    r = tp.row
    out = {"task_id": tp.task.task_id, "kind": tp.task.kind, "method": r["method"], "gpu": r["gpu"],
           "tier": r["tier"], "cards": r["cards_held"]}
    out.update({k: r[k] for k in TASK_FIELDS})
    out["tokens_per_sec"] = r["tokens_per_sec_used"]
    out.update({key: r[column] for key, column in SERVING_FIELDS.items()})
    out["deadline_hours"] = None if r["deadline_used"] is None else r["deadline_used"] * HOURS_PER_DAY
    out["cost_by_month"] = {m: tp.cost_in(i) for i, m in enumerate(months, start=1)}
    out["cards_by_month"] = {m: tm.cards for m, tm in zip(months, tp.months, strict=True)}
    out["unit_costs"] = {"per_million_output_tokens": r["cost_per_m_tokens"],
                         "per_thousand_requests": r["cost_per_k_requests"], "api_verdict": r["api_verdict"] or None}
    out["tier_costs"] = {t: r[f"cost_{t}"] for t in TIER_NAMES}
    out["tier_advice"] = r["tier_advice"] or None
    out["offer"] = gpu.offer(r["tier"])
    out["candidates"] = [{"gpu": c.gpu, "tier": c.row["tier"], "cards": c.row["cards_held"], "gpu_hours_per_month": c.row["gpu_hours_per_month"],
                          "monthly_cost": None if c.excluded else c.row["monthly_cost"], "chosen": c.chosen,
                          "excluded": c.excluded or None} for c in tp.candidates]
    out["warnings"] = list(tp.warnings)
    return out


def plan_json(plan: Plan, reconciliation: dict | None = None, recon_checks: tuple[Check, ...] = ()) -> dict:
    """The whole §6 document; `recon_checks` the reconciled months' checks (budgetgen.plan.checks.recon_checks)."""
    s = plan.inputs.settings
    return {
        "currency": s.currency,
        "months": list(plan.months),
        "tasks": [task_json(tp, plan.months, plan.inputs.gpu(tp.row["gpu"])) for tp in plan.tasks],
        "buy_vs_rent": {b.gpu: {"purchase_price": plan.inputs.gpu(b.gpu).purchase_price,
                                "daily_fixed": b.daily_fixed, "energy_per_hour": b.energy_per_hour,
                                "break_even_hours_per_day": b.break_even_hours_per_day,
                                "plan_hours_per_day": b.plan_hours_per_day, "verdict": b.verdict,
                                "best_commitment_rate": b.best_commitment_rate,
                                "break_even_vs_commitment": b.break_even_vs_commitment,
                                "break_even_utilisation": b.break_even_utilisation}
                        for b in plan.buy_vs_rent},
        "month_totals": {m: {"gpu": t.gpu, "commitments": t.commitments, "extras": t.extras, "buffer": t.buffer,
                             "total": t.total} for m, t in plan.month_totals.items()},
        "commitments": [{"gpu": c.gpu, "tier": c.tier, "term_months": c.term_months, "rate": c.rate,
                         "replaced_price": c.replaced_price, "break_even_utilisation": c.break_even, "proposed_cards": c.proposed, "cards": c.cards,
                         "monthly_cost": c.monthly_cost, "term_total": c.term_total,
                         "months_after_plan": c.months_after_plan, "after_plan_cost": c.after_plan_cost,
                         "by_month": {m: {"demand_hours": c.demand[i], "rent": c.rent[i],
                                          "committed_cost": c.committed_cost[i], "covered_hours": c.covered[i],
                                          "unused_hours": c.unused_hours[i], "unused_cost": c.unused_cost[i],
                                          "rent_displaced": c.displaced[i], "adjustment": c.adjustment[i]}
                                      for i, m in enumerate(plan.months)}}
                        for c in plan.commitments],
        "tier_totals": plan.tier_totals,
        "period_total": plan.period_total,
        "scenarios": {"totals": plan.scenario_totals,
                      "tornado": [{"row": w.label, "low": w.low, "high": w.high, "swing": w.size}
                                  for w in plan.tornado]},
        "order": order_json(plan),
        "budgets": [{"cost_center": line.label or None, "monthly_budget": line.budget.monthly_budget,
                     "planned": dict(zip(plan.months, line.planned, strict=True)),
                     "over": [m for m, over in zip(plan.months, line.over, strict=True) if over],
                     "overrun": line.overrun} for line in plan.budgets],
        "checks": checks_json(plan, (*plan.checks, *recon_checks)),
        "warnings": list(plan.warnings),
        "reconciliation": reconciliation or {},
    }


def order_json(plan: Plan) -> dict:
    """The Order sheet's numbers (budgetgen.plan.order, which the sheet renders): per provider what to reserve and what to
    rent by month, the GPU total (the plan's GPU spend with the commitments) and the plan total (Summary's)."""
    order = plan.order
    months = plan.months
    return {
        "providers": [{"provider": b.provider or None, "regions": list(b.regions),
                       "reserve": [{"gpu": r.gpu, "tier": r.tier, "region": r.region or None, "cards": r.cards,
                                    "term_months": r.term_months, "start": r.start, "rate": r.rate,
                                    "cards_by_month": dict(zip(months, r.cards_by_month, strict=True)),
                                    "card_hours": r.card_hours, "total": r.total, "monthly_cost": r.monthly_cost,
                                    "upfront": r.upfront, "after_plan_cost": r.after_plan_cost}
                                   for r in b.reservations],
                       "rent": [{"gpu": line.gpu, "tier": line.tier, "region": line.region or None,
                                 "cards_by_month": dict(zip(months, line.cards_by_month, strict=True)),
                                 "quantity": line.quantity, "unit": line.quantity_unit, "unit_price": line.unit_price,
                                 "total": line.total, "tasks": list(line.tasks)} for line in b.lines],
                       "subtotal": b.subtotal} for b in order.blocks],
        "gpu_total": order.gpu_total,
        "extras": math.fsum(t.extras for t in plan.month_totals.values()),
        "buffer": math.fsum(t.buffer for t in plan.month_totals.values()),
        "plan_total": plan.period_total,
    }


def checks_json(plan: Plan, checks: tuple[Check, ...]) -> list[dict]:
    """The Checks sheet's rows (budgetgen.plan.checks, which the sheet renders): each check's label, the sheet it is
    about (null: the budget's), its computed and expected values, their currency (null for a count) and whether it
    passes."""
    currency = plan.inputs.settings.currency
    return [{"label": c.label, "sheet": c.sheet or None, "computed": c.computed, "expected": c.expected,
             "currency": currency if c.unit == "money" else None, "passes": c.passes} for c in checks]
