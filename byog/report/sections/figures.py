"""Charts and plots: the Mermaid charts (``byog.report.mermaid``), then the PNGs under plots/,
embedded with links relative to report.md (report format 2: the PNGs only).

``plots/<name>.png`` resolves inside the unpacked bundle and the run directory. A PR comment has
no folder to resolve against and GitHub's API cannot upload images into one, so a re-render for
a comment either gets an ``image_base`` where the PNGs were published (docs/pr-workflow.md) or
``None``, and then names the files instead of embedding them. Which plots exist is
``byog.report.plots.plots_for``: the same list ``write_plots`` draws.
"""

from __future__ import annotations

from byog.report.context import ReportContext
from byog.report.mermaid import charts
from byog.report.plots import Plot, plots_for


def section(ctx: ReportContext) -> list[str]:
    if ctx.report_format >= 3:
        return _charts(ctx)
    plots = plots_for(ctx.summary)
    if not plots:
        return []
    return _pngs(ctx, plots, ["## Plots", ""], "In the bundle (not embedded here)")


def _charts(ctx: ReportContext) -> list[str]:
    """Mermaid charts (drawn by GitHub), then the PNGs: linked where they are, named otherwise."""
    drawn = charts(ctx.summary, ctx.report_format)
    plots = plots_for(ctx.summary)
    if not drawn and not plots:
        return []
    lines = ["## Charts", "", *drawn]
    return _pngs(ctx, plots, lines, "Plots in the bundle") if plots else lines


def _pngs(ctx: ReportContext, plots: list[Plot], lines: list[str], named: str) -> list[str]:
    """The PNGs after ``lines``: embedded from ``image_base`` where they are published, else named."""
    base = ctx.inputs.image_base
    if base is None:
        names = ", ".join(f"`plots/{p.name}`" for p in plots)
        return [*lines, f"{named}: {names}.", ""]
    lines = [*lines]
    for p in plots:
        lines += [f"![{p.alt_in(ctx.report_format)}]({base}{p.name})", ""]
    if ctx.invalid:
        lines += ["Invalid points are drawn as red crosses (and hatched boxes) in the plots.", ""]
    return lines
