"""The command line: init, validate, build, diff, models, catalog (and catalog import), calibrate. The only module that
imports click."""

from __future__ import annotations

import datetime as dt
import errno
import functools
import io
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from .api import build_budget, default_output, results_json
from .catalog.gpus import CATALOG_CURRENCY, builtin_catalog
from .catalog.models import builtin_models, format_models_table, models_json
from .catalog.price_import import SUFFIX, import_prices
from .catalog.prices import builtin_offers
from .core.errors import BudgetgenError, InputError, OutputError, printable
from .core.i18n import LANGS, say, tr
from .core.inputs import Settings
from .core.schema import TIER_NAMES
from .core.warnings import warning_count
from .io.reader import read_inputs
from .io.safefile import check_outputs, staged_outputs
from .io.template import write_template
from .model.calibrate import calibrate as fit_runs
from .model.calibrate import check_held_out, format_fit, read_measured, read_plan_catalogs, write_fit
from .plan.engine import plan_budget
from .recon.dialects import DEFAULT_TABLE, DIALECTS

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Interrupted(BaseException):
    """A signal stopped the command (a BaseException, like KeyboardInterrupt, so no `except Exception` eats it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _fail(exc: BudgetgenError, lang: str = "en") -> None:
    error = tr("Error: ", lang)
    if isinstance(exc, InputError):
        for problem in exc.problems:
            click.echo(error + printable(problem.render(lang)), err=True)
        click.echo(tr("{n} problem(s) found; nothing was written.", lang).format(n=len(exc.problems)), err=True)
    else:
        click.echo(error + printable(exc), err=True)
    sys.exit(1)


@contextmanager
def _reported(lang: str = "en", outputs: Iterable[Path | None] = ()) -> Iterator[None]:
    """Run a command's work: a BudgetgenError becomes `Error:` lines and exit 1; SIGINT, SIGTERM and SIGHUP all
    unwind it (every `finally` removes its temporary files) and end in an `Error:` line and exit 128 + signal.

    A signal that came while a library was running (DuckDB turns it into its own "interrupted" error) counts as
    that signal, whatever the library raised. `outputs` are the command's output files: the line after a signal
    says which of them changed (the commit of outputs holds signals back until all are in place), else none."""
    before = {Path(p): _state(Path(p)) for p in outputs if p is not None}
    received: list[int] = []
    with _signals_raise(received):
        try:
            yield
        except (Interrupted, KeyboardInterrupt) as exc:
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            _stopped(signum, [p for p, state in before.items() if _state(p) != state], lang)
        except Exception as exc:
            if received:
                _stopped(received[0], [p for p, state in before.items() if _state(p) != state], lang)
            if isinstance(exc, BudgetgenError):
                _fail(exc, lang)
            if isinstance(exc, OSError):  # the machine's, not the input's (no usable temporary folder, say)
                _fail(BudgetgenError(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")), lang)
            raise


def _state(path: Path) -> tuple | None:
    """What identifies a file's content version: inode, size and modification time (None: no file)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _stopped(signum: int, changed: list[Path], lang: str) -> None:
    name = signal.Signals(signum).name
    if changed:
        message = tr("stopped by {signal} after writing {files}", lang).format(
            signal=name, files=", ".join(printable(str(p)) for p in changed))
    else:
        message = tr("stopped by {signal}; no output was written or changed", lang).format(signal=name)
    click.echo(tr("Error: ", lang) + message, err=True)
    sys.exit(128 + signum)


@contextmanager
def _signals_raise(received: list[int]) -> Iterator[None]:
    """Turn the stop signals into Interrupted while the work runs (each noted in `received`); once one came, the
    cleanup ignores the rest."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return

    def stop(signum: int, frame: object) -> None:
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        received.append(signum)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


DATE_OPTION = click.option("--date", "build_date", type=click.DateTime(formats=["%Y-%m-%d"]),
                           help="Build as of this date (YYYY-MM-DD): the default plan period and the file's "
                                "properties follow it. Default: the build_date setting, else today.")
LANG_OPTION = click.option("--lang", type=click.Choice(LANGS), default="en", show_default=True,
                           help="Language of the workbook's sheet names (input), headers, labels and notes, "
                                "and of the messages: en or zh (Chinese).")


class _Commands(click.Group):
    """budgetgen's commands: a report that cannot reach standard output (a full disk: /dev/full) ends in one
    `Error:` line on stderr and exit 1, not a traceback (a closed pipe stays click's: exit 1 quietly)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise
            _silence_stdout()
            click.echo(f"Error: cannot write to standard output ({exc.strerror or exc}); the command ran, "
                       "only its report was lost", err=True)
            sys.exit(1)


def _silence_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # not a real file (a test's buffer)
        return


@click.group(cls=_Commands)
@click.version_option(package_name="budgetgen")
def main() -> None:
    """budgetgen: turn an inventory of AI workloads into a GPU budget workbook."""


@main.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.option("--currency", default=CATALOG_CURRENCY, show_default=True,
              help="The plan's currency (ISO code): the catalog's prices, the money defaults and the example "
                   "extras are written converted into it at the bundled reference rate, the rate noted per row.")
@DATE_OPTION
@LANG_OPTION
def init(path: Path, force: bool, currency: str, build_date, lang: str) -> None:
    """Write a fillable input workbook with notes, dropdowns and example rows."""
    with _reported(lang, (path,)):
        currency = currency.strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", currency):
            raise OutputError(f"--currency {currency!r} is not an ISO currency code (three letters, e.g. USD)")
        if path.exists() and not force:
            raise OutputError(f"{path} exists: choose another name or pass --force")
        check_outputs([path])
        with staged_outputs([path]) as staging:
            write_template(staging[path], lang, currency, build_date and build_date.date())
    click.echo(tr("Wrote {path}: fill in the Tasks sheet, then run `budgetgen build {path}`.", lang).format(path=printable(path)))


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--max-total", "max_total", type=float,
              help="Fail (exit 1) when the period total is above this amount in the plan currency (for CI).")
@DATE_OPTION
@LANG_OPTION
def validate(path: Path, max_total: float | None, build_date, lang: str) -> None:
    """Check an input workbook: every error and warning with sheet and cell."""
    with _reported(lang):
        plan = plan_budget(read_inputs(path, today=build_date and build_date.date()))
    _warn(plan.warnings, lang)
    click.echo(tr("OK: {tasks} tasks, {warnings} warning(s).", lang).format(tasks=len(plan.tasks),
                                                                             warnings=warning_count(plan.warnings)))
    cur = plan.inputs.settings.currency
    if max_total is not None and plan.period_total > max_total:
        click.echo(tr("Error: the period total {total} is above --max-total {limit}", lang).format(
            total=_money(plan.period_total, cur), limit=_money(max_total, cur)), err=True)
        sys.exit(1)


def _warn(warnings, lang: str, err: bool = False) -> None:
    """Every warning line of the plan, one a line: the plan holds one line per kind, with its count and items, the
    most important kinds first (warnings.group_warnings), so nothing is left out. On stderr with `err`."""
    for warning in warnings:
        click.echo(tr("Warning: ", lang) + printable(say(warning, lang)), err=err)


def _amount(value: float) -> str:
    """An amount as the workbook shows money: thousands grouped, to the cent (the totals' lines, which add up)."""
    return f"{value:,.2f}"


def _cents(value: float, currency: str) -> str:
    return f"{_amount(value)} {currency}"


def _money(value: float, currency: str) -> str:
    """An amount in whole units and its currency (a limit or an overrun)."""
    return f"{value:,.0f} {currency}"


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help=f"Output workbook (default {default_output('<input stem>')}).")
@click.option("--bills", "bills", multiple=True, type=click.Path(path_type=Path),
              help="A FOCUS bill: a CSV, Parquet or xlsx file, a folder or a glob of them (a provider's export "
                   "of Parquet parts); repeatable.")
@click.option("--bill-sums", "bill_sums", type=click.Path(dir_okay=False, path_type=Path),
              help="The result (CSV or Parquet) of the query `budgetgen bill-sql` prints, run where the bill lives, "
                   "in place of --bills.")
@click.option("--usage", "usage", multiple=True, type=click.Path(path_type=Path),
              help="GPU utilisation (monthly rows, samples or nvidia-smi CSV); repeatable.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="Also write the engine's results as JSON (-: to stdout, the other lines then to stderr).")
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
@click.option("--fail-over-budget", "fail_over_budget", is_flag=True,
              help="Exit 1 after writing when a plan month is over a Budgets row (for CI).")
@DATE_OPTION
@LANG_OPTION
def build(path: Path, output: Path | None, bills: tuple[Path, ...], bill_sums: Path | None, usage: tuple[Path, ...],
          json_path: Path | None, quiet: bool, fail_over_budget: bool, build_date, lang: str) -> None:
    """Validate, compute and write the budget workbook."""
    to_stdout = json_path == Path("-")
    with _reported(lang, (output or default_output(path), None if to_stdout else json_path)):
        result = build_budget(path, output, bills=bills, bill_sums=bill_sums, usage=usage, json_path=None if to_stdout else json_path,
                              lang=lang, build_date=build_date and build_date.date(), progress=_progress(quiet))
    plan, recon = result.plan, result.recon
    if to_stdout:
        click.echo(results_json(plan, recon, result.billed_input))
    echo = functools.partial(click.echo, err=to_stdout)
    cur = plan.inputs.settings.currency
    echo(f"{tr('Wrote', lang)} {printable(result.workbook)}")
    echo(tr("Period total {first} to {last}: {total}", lang).format(
        first=plan.months[0], last=plan.months[-1], total=_cents(plan.period_total, cur)))
    for month, t in plan.month_totals.items():   # every part of the month's total, as Summary's columns
        echo(tr("  {month}: GPU {gpu} + commitments {commitments} + extras {extras} + buffer {buffer} = {total} "
                "{currency}", lang).format(month=month, gpu=_amount(t.gpu), commitments=_amount(t.commitments),
                                           extras=_amount(t.extras), buffer=_amount(t.buffer),
                                           total=_amount(t.total), currency=cur))
    for month, r in sorted(recon.items()):
        echo(tr("Recon {month}: GPU and commitments billed {gpu} against planned {planned}; total billed {billed} "
                "against planned {planned_all}; {flagged} flagged resource(s)", lang).format(
            month=printable(month), gpu=_cents(r.billed_gpu_all, cur), planned=_cents(r.planned_gpu_all, cur),
            billed=_cents(r.billed_total, cur), planned_all=_cents(r.planned_all, cur),
            flagged=r.resources.flagged()) + (tr(" (partial month)", lang) if r.partial else "")
            + "".join(tr("; {billed} billed in {code} converted at {rate} {currency} per 1 {code} ({as_of})",
                         lang).format(billed=_cents(c.billed, c.currency), code=c.currency, rate=f"{c.rate:g}",
                                      currency=cur, as_of=c.as_of) for c in r.currencies))
    _warn(plan.warnings, lang, err=to_stdout)  # the plan's, then those about the bills and usage
    over = [line for line in plan.budgets if any(line.over)]
    if fail_over_budget and over:
        click.echo(tr("Error: over budget: {lines}", lang).format(lines="; ".join(
            f"{line.label or tr('the whole plan', lang)} {sum(line.over)} month(s), {_money(line.overrun, cur)}"
            for line in over)), err=True)
        sys.exit(1)


@main.command("bill-sql")
@click.option("--dialect", type=click.Choice(DIALECTS), default="duckdb", show_default=True,
              help="The SQL dialect (athena: Trino's).")
@click.option("--table", default=DEFAULT_TABLE, show_default=True, help="The FOCUS table the query reads.")
@click.option("--timezone", "timezone", default="UTC", show_default=True,
              help="The billing time zone (the workbook's billing_timezone setting): months and days are its.")
def bill_sql(dialect: str, table: str, timezone: str) -> None:
    """Print the query that groups a FOCUS bill for reconciliation; give its result to build --bill-sums."""
    from .recon.bill_sql import grouping_sql  # DuckDB and sqlglot load for this command only

    click.echo(grouping_sql(dialect, table, timezone))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The catalog as JSON (one object a model) on stdout.")
def models(as_json: bool) -> None:
    """List the built-in model catalog (a Models sheet in the input adds or overrides rows)."""
    click.echo(models_json() if as_json else format_models_table(), nl=as_json)


@main.command()
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the changes to a workbook (a Diff sheet with a check that they add up).")
@DATE_OPTION
def diff(old: Path, new: Path, output: Path | None, build_date) -> None:
    """Show what changed from OLD to NEW (input or budget workbooks) and what each change costs."""
    from .plan.diff import diff_files, format_table, write_diff_workbook  # the writers load for this command only

    with _reported(outputs=(output,)):
        check_outputs([output], [old, new])
        result = diff_files(old, new, today=build_date and build_date.date())
        with staged_outputs([output]) as staging:
            if output:
                write_diff_workbook(result, staging[output])
    click.echo(format_table(result))
    if output:
        click.echo(f"Wrote {printable(output)}")


def _progress(quiet: bool):
    """Stage messages with the elapsed time on stderr (nothing with --quiet)."""
    start = time.monotonic()

    def say(message: str) -> None:
        if not quiet:
            click.echo(f"[{time.monotonic() - start:6.1f}s] {printable(message)}", err=True)
    return say


@main.command()
@click.argument("measured", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the fitted GPUs and settings as GPUs and Settings sheets an input workbook can take.")
@click.option("--date", "build_date", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="The date the fitted rows' source names (YYYY-MM-DD). Default: today.")
@click.option("--check", "check", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Runs kept out of the fit (same columns): their ratios before and after it are printed.")
@click.option("--input", "plan_input", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="An input workbook whose GPUs and Models sheets (over the catalogs) and Settings the runs are "
                   "fitted with: a card or model only your input names, or your own figures for one.")
def calibrate(measured: Path, output: Path | None, build_date, check: Path | None, plan_input: Path | None) -> None:
    """Fit each GPU's bandwidth and matmul efficiency, the settings of each workload and precision and the memory
    rule's figures to your measured runs (CSV: kind, model, gpu, cards, method, train_precision, kv_cache_dtype,
    prompt, output, concurrency, tokens, measured, micro_batch_tokens, activation_checkpointing)."""
    with _reported(outputs=(output,)):
        check_outputs([output], [measured] + ([check] if check else []) + ([plan_input] if plan_input else []))
        if plan_input:
            inputs = read_plan_catalogs(plan_input, build_date.date() if build_date else None)
            gpus, catalog_models, settings = list(inputs.gpus), inputs.models or builtin_models(), inputs.settings
        else:
            gpus, catalog_models, settings = builtin_catalog(), builtin_models(), Settings()
        by_name = {g.name.lower(): g for g in gpus}
        named = plan_input.name if plan_input else None
        runs = read_measured(measured, catalog_models, by_name, named)
        kept_out = read_measured(check, catalog_models, by_name, named) if check else None
        day = (build_date or dt.datetime.now()).date().isoformat()
        fit = fit_runs(runs, by_name, settings, catalog_models, f"calibrated from {{n}} runs on {day}")
        held_out = check_held_out(fit, kept_out, by_name, settings, catalog_models) if kept_out else None
        with staged_outputs([output]) as staging:
            if output:
                write_fit(fit, staging[output])
    click.echo(format_fit(fit, held_out), nl=False)
    if output:
        click.echo(f"Wrote {printable(output)}: paste its rows on your input's GPUs and Settings sheets")


@main.group(invoke_without_command=True)
@click.pass_context
def catalog(ctx: click.Context) -> None:
    """Show the built-in GPU catalog and its price offers (`catalog import` writes offers into an input)."""
    if ctx.invoked_subcommand is not None:
        return
    click.echo("Built-in catalog (specs; a plan prices each GPU with one of the offers below):")
    click.echo(f"{'gpu':<12}{'class':<13}{'GB':>6}{'GB/s':>7}{'TFLOP/s':>9}  {'link':<7}")
    for g in builtin_catalog():
        click.echo(f"{g.name:<12}{g.gpu_class:<13}{g.vram_gb:>6g}{g.bandwidth_gbs:>7g}{g.tflops:>9g}  "
                   f"{g.interconnect:<7}")
    click.echo("\nOffers (each in its own currency: per card-hour, monthly per card-month; - not offered; market = "
               "the median over providers):")
    click.echo(f"{'gpu':<12}{'provider':<16}{'region':<20}{'cur':<5}" + "".join(f"{t:>11}" for t in TIER_NAMES) +
               f"{'purchase':>10}  as_of")
    names = {g.name for g in builtin_catalog()}
    for o in builtin_offers():
        if o.gpu not in names:
            continue
        tiers = "".join(f"{_price(o.prices.get(t)):>11}" for t in TIER_NAMES)
        purchase = f"{o.purchase_price:>10,.0f}" if o.purchase_price else f"{'-':>10}"
        click.echo(f"{o.gpu:<12}{o.provider:<16}{o.region[:19]:<20}{o.currency:<5}{tiers}{purchase}  {o.as_of}")


@catalog.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--into", "into", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The input workbook whose GPUs sheet gets the prices (it is not changed: a copy is written).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help=f"The priced copy (default: INTO with {SUFFIX} before .xlsx).")
@click.option("--provider", help="Take this provider's offers only (default: the market offer, else the first).")
@click.option("--region", help="Take offers for this region (or the provider's \"any\"-region offer) only.")
def import_prices_command(path: Path, into: Path, output: Path | None, provider: str | None,
                          region: str | None) -> None:
    """Read a price snapshot (gpu_prices.csv's columns), a SkyPilot catalog file (vms.csv as published: InstanceType,
    AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price, Region, SpotPrice; the provider is its folder's
    name) or a quote sheet (gpu, provider, region, tier, price, currency, as_of), CSV or xlsx, and write the offer
    chosen per GPU into the GPUs sheet of a copy of INTO."""
    with _reported():
        done = import_prices(path, into, output, provider, region)
    found = done.found
    click.echo(f"Read {printable(str(path))}: a {found.description}, "
               f"{len(found.offers)} offer(s)" + (f"; flags from {printable(found.flags)}" if found.flags else "") +
               (f"; labels not in the catalog, skipped: {printable(', '.join(found.skipped))}" if found.skipped else "") +
               "".join(f"; {printable(note)}" for note in found.notes))
    for o in done.written:
        tiers = ", ".join(f"{t} {o.prices[t]:g}" for t in TIER_NAMES if o.prices.get(t) is not None) or "no price"
        click.echo(printable(f"  {o.gpu}: {o.provider} ({o.region}) {o.currency} {tiers}; as_of {o.as_of}"))
    if done.not_offered:
        click.echo(printable(f"  not offered: {', '.join(done.not_offered)}"))
    click.echo(f"Wrote {printable(str(done.output))} (GPUs sheet, {len(done.written)} GPU(s))")


def _price(value: float | None) -> str:
    """A price as listed: thousands grouped, up to four decimals, no trailing zeros; - for none."""
    return "-" if value is None else f"{value:,.4f}".rstrip("0").rstrip(".")

