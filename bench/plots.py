"""The figures of docs/benchmarks.md, drawn from what the benchmarks keep in ``bench/.cache`` (each benchmark's
``--doc-only`` draws them again). Two generic charts, ``line_chart`` and ``bar_chart``, and a small function per
figure that picks its data. A PNG is byte-stable for the same data and the same matplotlib: fixed size and
resolution, no metadata that changes (the software's version, a date), so rewriting the document leaves git
clean. Drawn with matplotlib's Agg renderer (no display), which only ``make bench`` needs: the extra ``bench``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import cost

if TYPE_CHECKING:  # matplotlib is imported by what draws (bench.report imports this module for the names)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
WIDTH, HEIGHT, DPI = 7.2, 3.9, 100  # inches, dots per inch: 720 x 390 pixels
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")

BUILD_TIME = FIGURES / "build-time.png"
BUILD_TIME_ALT = (
    "Build wall time against site size, both axes logarithmic: sitemap-updater build, sitemap.js (coalesced and as "
    "its README shows), xml-sitemap-writer and the floor (JSON parse and gzip), from 10,000 to 1,000,000 pages"
)
COST = FIGURES / "cost-per-million.png"
COST_ALT = "Cost per million events by scenario, as bars stacked by AWS service (Lambda, SQS, DynamoDB, S3, "
COST_ALT += "CloudFront, CloudWatch)"
FRESHNESS = FIGURES / "freshness.png"
FRESHNESS_ALT = (
    "Freshness per scenario: the share of changed pages the CDN surely serves against seconds since the CMS sent "
    "the event, with the goals (p50 at most 20 s, p99 at most 60 s) marked"
)
PRICE_LIST = FIGURES / "price-list.png"
PRICE_LIST_ALT = (
    "Cost per million events against the FreshnessSeconds setting, a line per rate (1 event/s, 50 events/s, the "
    "one-section burst of 1,000/s), both axes logarithmic: a longer promise costs less at low rates"
)


@dataclass(frozen=True)
class Axis:
    """An axis: its label with the unit, and whether it is logarithmic."""

    label: str
    log: bool = False


def _style() -> AbstractContextManager[None]:
    import matplotlib

    return matplotlib.rc_context({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8,
                                  "svg.hashsalt": "sitemap-updater"})  # fmt: skip


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=DPI, metadata={"Software": None})  # no version: the same bytes
    return path


def _number(value: float, _position: object = None) -> str:
    """A tick as the tables write numbers: 10,000 and 0.5, not 10^4 and 5x10^-1."""
    return f"{value:,.0f}" if value >= 1 or value == 0 else f"{value:g}"


def _axes(axes: Axes, title: str, x: Axis | None, y: Axis) -> None:
    from matplotlib.ticker import FuncFormatter

    axes.set_title(title)
    for axis, which, scale in ((x, axes.xaxis, axes.set_xscale), (y, axes.yaxis, axes.set_yscale)):
        if axis is None:
            continue
        if axis.log:
            scale("log")
            which.set_major_formatter(FuncFormatter(_number))
        which.set_label_text(axis.label)
    axes.minorticks_off()  # a log axis's minor ticks: slow to draw and unlabelled
    axes.grid(True, which="major", color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)


def line_chart(
    path: Path,
    title: str,
    x: Axis,
    y: Axis,
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    step: bool = False,
    marks: Sequence[tuple[str, float]] = (),
    dashed: Collection[str] = (),
    ticks: tuple[Sequence[float], Sequence[float]] = ((), ()),
) -> Path:
    """One line per series (its (x, y) points, in order), markers on the points unless ``step`` (a step line, as a
    distribution is drawn); ``marks`` are labelled vertical lines (a goal, a limit), ``dashed`` the series drawn
    dashed (a reference rather than a contender); ``ticks`` the x and y values to label, where not the default."""
    with _style():
        figure, axes = _figure()
        _axes(axes, title, x, y)
        for number, (label, points) in enumerate(series.items()):
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            style: dict[str, Any] = {"label": label, "color": COLOURS[number % len(COLOURS)], "linewidth": 1.4,
                     "linestyle": "--" if label in dashed else "-"}  # fmt: skip
            if step:
                axes.step(xs, ys, where="post", **style)
            else:
                axes.plot(xs, ys, marker="o", markersize=4, **style)
        for label, at in marks:
            axes.axvline(at, color="#555555", linestyle="--", linewidth=0.8)
            axes.annotate(label, (at, 1), xycoords=("data", "axes fraction"), xytext=(-3, -10), ha="right",
                          textcoords="offset points", fontsize=8, color="#555555")  # fmt: skip
        for values, set_ticks in zip(ticks, (axes.set_xticks, axes.set_yticks), strict=True):
            if values:
                set_ticks(list(values), [_number(v) for v in values])
        axes.legend(loc="best", frameon=False)
        return _save(figure, path)


def bar_chart(
    path: Path,
    title: str,
    y: Axis,
    categories: Sequence[str],
    stacks: Mapping[str, Sequence[float]],
    *,
    totals: bool = True,
) -> Path:
    """One bar per category, stacked from ``stacks`` (a value per category each, in the categories' order), the
    total written above each bar when ``totals``."""
    with _style():
        figure, axes = _figure()
        _axes(axes, title, None, y)
        base = [0.0] * len(categories)
        places = range(len(categories))
        for number, (label, values) in enumerate(stacks.items()):
            axes.bar(places, values, bottom=base, label=label, color=COLOURS[number % len(COLOURS)], width=0.6)
            base = [b + v for b, v in zip(base, values, strict=True)]
        if totals:
            for place, height in zip(places, base, strict=True):
                axes.annotate(f"{height:,.2f}", (place, height), xytext=(0, 2), textcoords="offset points",
                              ha="center", va="bottom", fontsize=8)  # fmt: skip
            axes.set_ylim(0, max(base, default=1) * 1.12 or 1)
        axes.set_xticks(list(places), [_wrap(c) for c in categories])
        axes.legend(loc="upper right", frameon=False)
        return _save(figure, path)


def _wrap(label: str, width: int = 18) -> str:
    """A category's label on lines of about ``width`` characters, broken at spaces."""
    lines: list[str] = []
    for word in label.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def build_time(walls: Mapping[str, Mapping[int, float]], path: Path = BUILD_TIME) -> Path:
    """Figure: median wall seconds of each tool (``walls``: tool -> pages -> seconds) against the site's size."""
    series = {tool: [(float(pages), s) for pages, s in sorted(by_size.items())] for tool, by_size in walls.items()}
    floor = [tool for tool in series if tool.startswith("floor")]
    return line_chart(path, "Full build: wall time by site size", Axis("pages", log=True),
                      Axis("wall time (s)", log=True), series, dashed=floor)  # fmt: skip


def cost_per_million(data: dict[str, Any], path: Path = COST) -> Path:
    """Figure: the "Cost per million events" table of ``bench.incremental``'s JSON, a bar per scenario."""
    from bench.report import per_million

    costs = [s for s in data["scenarios"] if s.get("role") == "cost"]
    bills = [per_million(data, scenario) for scenario in costs]
    stacks = {line: [bill[line] for bill in bills] for line in cost.LINES}
    return bar_chart(path, "Cost per million events, by AWS service (list prices, us-east-1)",
                     Axis("USD per 1,000,000 events"), [s["label"] for s in costs], stacks)  # fmt: skip


def freshness(data: dict[str, Any], path: Path = FRESHNESS) -> Path:
    """Figure: the distribution of each scenario's event-to-CDN seconds (``freshness.seconds``), as the share of its
    changed pages served by then."""
    found = {s["label"]: sorted(s.get("freshness", {}).get("seconds") or []) for s in data["scenarios"]}
    last = max((seconds[-1] for seconds in found.values() if seconds), default=0.0)
    series = {}
    for label, seconds in found.items():
        if seconds:  # a step up at each page's seconds, level to the slowest of all scenarios
            steps = [(s, 100 * (i + 1) / len(seconds)) for i, s in enumerate(seconds)]
            series[label] = [(0.0, 0.0), *steps, (last, 100.0)]
    return line_chart(path, "Freshness: event sent to the CDN surely serving it", Axis("seconds"),
                      Axis("changed pages served (%)"), series, step=True,
                      marks=[("goal: p50 at most 20 s", 20.0), ("p99 at most 60 s", 60.0)])  # fmt: skip


def price_list(rows: Sequence[Mapping[str, Any]], path: Path = PRICE_LIST) -> Path:
    """Figure: the price list (``bench.report.price_list``'s rows), USD per million events against the freshness
    setting, a line per rate."""
    series: dict[str, list[tuple[float, float]]] = {}
    for row in sorted(rows, key=lambda r: (r["rate"], r["freshness_setting_s"])):
        series.setdefault(row["scenario"], []).append((float(row["freshness_setting_s"]), row["usd_per_million"]))
    settings = sorted({float(row["freshness_setting_s"]) for row in rows})
    dollars = [d for d in (1, 2, 3, 5, 10, 20, 30, 50, 100) if d <= max(r["usd_per_million"] for r in rows) * 1.2]
    return line_chart(path, "Cost per million events against the freshness setting",
                      Axis("FreshnessSeconds (s)", log=True), Axis("USD per 1,000,000 events", log=True),
                      series, ticks=(settings, dollars))  # fmt: skip


def incremental(data: dict[str, Any]) -> list[Path]:
    """The figures of ``bench.incremental``'s JSON (the price list's when it holds the freshness sweep)."""
    drawn = [cost_per_million(data), freshness(data)]
    if data.get("price_list"):
        drawn.append(price_list(data["price_list"]))
    return drawn
