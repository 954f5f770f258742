"""The paper's Figure 4 (§4.5): for each label, the probability that bit i is 1, as a heatmap
(`allennlp bits heatmap`).

One panel per label view (`tag`; for BIO-style NER corpora `prefix` and `type`, the paper's upper and lower
sub-figures), one row per gold label, named with its count of words (`label (words)`), one column per bit (bit i =
head i, head 0 the most significant bit of the hex code), the percentage in each cell; blue below 50 %, white at
50 %, red above, as the colour bar under the panels says. A label of fewer than `FEW_WORDS` words is faded and
hatched and its name grey: its percentages rest on few words, so its colours must not look as strong as those of a
large label. The numbers are `stats["labels"][view]["p_one_given_label"]` of `stats.code_statistics`, and are
written as JSON beside the PNG.

matplotlib is imported only when a picture is drawn (not when the plugin registers the subcommand), and only its
object-oriented API with the Agg canvas is used: no pyplot, no global backend switch.
"""
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bitcode_allennlp.host.outputs import atomic_file, write_text

# Layout, in inches (the figure is exactly `heatmap_size` pixels).
HEADER = 0.4  # the corpus line at the top
PANEL_TITLE = 0.35
TICKS = 0.25  # bit numbers above each panel
GAP = 0.2  # between panels
LEGEND = 0.75  # the colour bar under the panels: its title, the bar and its ticks
BOTTOM = 0.35  # the note on bit order
RIGHT = 0.2
LABEL_CHAR = 0.075  # width of one character of a row label
LABEL_PAD = 0.3
FEW_WORDS = 30
"""A label of fewer words is faded and hatched here and in the explorer's heatmap (`bits explore`): one of its words
moves its percentages by more than 3 points."""
COLOUR_BAR_TITLE = "colour: P(bit i = 1 | gold label), in %"


def default_views(stats: Dict[str, Any]) -> List[str]:
    """`prefix` and `type` for BIO-style NER codes (both of the paper's sub-figures), otherwise `tag`."""
    views = stats["labels"]
    if not views:
        raise ValueError(f"{stats['corpus']} has no gold tags or trees: there is nothing to draw per label")
    return ["prefix", "type"] if "prefix" in views else ["tag"]


def heatmap_data(stats: Dict[str, Any], views: Optional[Sequence[str]] = None,
                 max_labels: Optional[int] = None) -> Dict[str, Any]:
    """
    The numbers of the picture, taken from `code_statistics` output.

    # Parameters

    stats : `Dict[str, Any]`
        `code_statistics(corpus)`.
    views : `Sequence[str]`, optional (default = `default_views(stats)`)
        Label views, one panel each, top to bottom.
    max_labels : `int`, optional (default = `None`)
        Keep only the first labels of each view in display order (most frequent first; all prefixes).

    # Returns

    `{"corpus", "num_bits", "words", "panels": [{"view", "labels", "counts", "num_labels", "p_one"}]}`, where
    `p_one[r][i]` = P(bit i = 1 | labels[r]).
    """
    views = list(views) if views else default_views(stats)
    panels = []
    for view in views:
        if view not in stats["labels"]:
            raise ValueError(f"no label view {view!r} in {stats['corpus']} (it has: {', '.join(stats['labels'])})")
        s = stats["labels"][view]
        keep = s["labels"][:max_labels] if max_labels else s["labels"]
        panels.append({"view": view, "labels": keep, "counts": s["counts"][: len(keep)],
                       "num_labels": s["num_labels"], "p_one": [s["p_one_given_label"][label] for label in keep]})
    return {"corpus": stats["corpus"], "num_bits": stats["num_bits"], "words": stats["words"], "panels": panels}


def row_label(label: str, count: int) -> str:
    return f"{label} ({count:,})"


def heatmap_size(data: Dict[str, Any], cell: float = 0.36, dpi: int = 100) -> Tuple[int, int]:
    """
    The picture's size in pixels `(width, height)`:

        width  = dpi * (LABEL_PAD + LABEL_CHAR * longest row label + K * cell + RIGHT)
        height = dpi * (HEADER + sum over panels (PANEL_TITLE + TICKS + rows * cell) + GAP * (panels - 1) + LEGEND
                        + BOTTOM)

    each rounded to whole pixels.
    """
    longest = max(len(row_label(label, count)) for panel in data["panels"]
                  for label, count in zip(panel["labels"], panel["counts"]))
    width = LABEL_PAD + LABEL_CHAR * longest + data["num_bits"] * cell + RIGHT
    height = (HEADER + sum(PANEL_TITLE + TICKS + len(panel["labels"]) * cell for panel in data["panels"])
              + GAP * (len(data["panels"]) - 1) + LEGEND + BOTTOM)
    return int(round(width * dpi)), int(round(height * dpi))


def draw_heatmap(data: Dict[str, Any], out_path: str, cell: float = 0.36, dpi: int = 100) -> Tuple[int, int]:
    """
    Draws `heatmap_data` output into a PNG of `heatmap_size(data, cell, dpi)` pixels and returns that size.

    # Parameters

    cell : `float`, optional (default = `0.36`)
        Side of one cell in inches.
    dpi : `int`, optional (default = `100`)
    """
    figure = heatmap_figure(data, cell, dpi)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out_path, "wb") as file:  # a failed drawing leaves no half-written PNG
        figure.savefig(file, dpi=dpi, format="png")
    return heatmap_size(data, cell, dpi)


def heatmap_figure(data: Dict[str, Any], cell: float = 0.36, dpi: int = 100) -> Any:
    """The matplotlib `Figure` of `draw_heatmap` (Agg canvas): a panel per view, then the colour bar (its axes the
    last of `figure.axes`, titled with what the colour means), then the note on bit order."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width_px, height_px = heatmap_size(data, cell, dpi)
    width, height = width_px / dpi, height_px / dpi
    figure = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(figure)
    num_bits = data["num_bits"]
    longest = max(len(row_label(label, count)) for panel in data["panels"]
                  for label, count in zip(panel["labels"], panel["counts"]))
    left = LABEL_PAD + LABEL_CHAR * longest
    font = max(4.0, cell * 72 * 0.36)
    figure.text(0.5 / width, 1 - 0.25 / height, f"{data['corpus']}: {data['words']:,} words, "
                f"K = {num_bits} bits. Cell = P(bit i = 1 | gold label) in %", fontsize=font * 1.35, va="center")
    top, image = HEADER, None
    for panel in data["panels"]:
        rows = len(panel["labels"])
        top += PANEL_TITLE + TICKS
        axes = figure.add_axes((left / width, 1 - (top + rows * cell) / height, num_bits * cell / width,
                                rows * cell / height))
        image = _draw_panel(axes, panel, num_bits, font)
        top += rows * cell + GAP
    hatched = any(count < FEW_WORDS for panel in data["panels"] for count in panel["counts"])
    colour_bar = figure.add_axes((left / width, (BOTTOM + 0.3) / height, min(num_bits * cell, 4.0) / width,
                                  0.15 / height))
    figure.colorbar(image, cax=colour_bar, orientation="horizontal", ticks=[0, 25, 50, 75, 100])
    colour_bar.tick_params(labelsize=font, length=2)
    colour_bar.set_title(COLOUR_BAR_TITLE, fontsize=font * 1.1, loc="left", pad=3)
    figure.text(left / width, 0.5 * BOTTOM / height, "bit i = head i of the hash layer; head 0 is the most "
                "significant bit of the hex code" + (f"; faded and hatched: a label of fewer than {FEW_WORDS} words"
                                                     if hatched else ""), fontsize=font, va="center")
    return figure


def _draw_panel(axes: Any, panel: Dict[str, Any], num_bits: int, font: float) -> Any:
    """One label view's rows on `axes`: the cells, their percentages, the bit numbers, the label names with their
    counts (a label of fewer than `FEW_WORDS` words faded, hatched and grey); returns the image (for the colour bar)."""
    from matplotlib.patches import Rectangle

    rows = len(panel["labels"])
    percent = [[100.0 * p for p in row] for row in panel["p_one"]]  # (rows, K)
    image = axes.imshow(percent, cmap="RdBu_r", vmin=0, vmax=100, aspect="auto", interpolation="nearest")
    few = [count < FEW_WORDS for count in panel["counts"]]
    for r, row in enumerate(percent):
        for i, value in enumerate(row):
            axes.text(i, r, f"{value:.0f}", ha="center", va="center", fontsize=font, zorder=3,
                      color="0.25" if few[r] else "white" if abs(value - 50) > 30 else "black")
    axes.set_xticks(range(num_bits))
    axes.set_xticklabels([str(i) for i in range(num_bits)], fontsize=font)
    axes.xaxis.tick_top()
    axes.set_yticks(range(rows))
    names = axes.set_yticklabels([row_label(label, count) for label, count in zip(panel["labels"], panel["counts"])],
                                 fontsize=font * 1.1)
    for r, name in enumerate(names):
        if few[r]:  # faded (white at 55 %) and hatched, its name grey
            name.set_color("0.45")
            axes.add_patch(Rectangle((-0.5, r - 0.5), num_bits, 1, facecolor="white", alpha=0.55, linewidth=0))
            axes.add_patch(Rectangle((-0.5, r - 0.5), num_bits, 1, fill=False, hatch="///", edgecolor="0.6",
                                     linewidth=0))
    axes.tick_params(length=0)
    shown = "" if rows == panel["num_labels"] else f" ({rows} most frequent of {panel['num_labels']})"
    axes.set_title(f"{panel['view']}{shown}", fontsize=font * 1.25, loc="left", pad=TICKS * 72 + 2)
    return image


def write_heatmap(stats: Dict[str, Any], out_path: str, views: Optional[Sequence[str]] = None,
                  max_labels: Optional[int] = None, cell: float = 0.36, dpi: int = 100) -> Dict[str, Any]:
    """Draws the picture to `out_path` and writes its numbers to `out_path` with the suffix `.json`; returns them."""
    data = heatmap_data(stats, views, max_labels)
    data["size"] = list(draw_heatmap(data, out_path, cell, dpi))
    write_text(Path(out_path).with_suffix(".json"), json.dumps(data, indent=1))
    return data
