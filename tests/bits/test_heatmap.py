"""`bits.heatmap`: a PNG of the documented pixel size whose JSON numbers are the statistics' P(bit i = 1 | label)."""
import json
import struct

import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.heatmap import heatmap_size, write_heatmap
from bitcode_allennlp.bits.stats import code_statistics


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_heatmap_png_and_numbers(ner_codes, tmp_path):
    stats = code_statistics(read_codes_corpus(str(ner_codes)))
    out = tmp_path / "figs" / "heatmap.png"
    data = write_heatmap(stats, str(out), cell=0.5, dpi=40)
    # Default panels for BIOUL tags: prefix (B L U O) and type (PER MISC ORG O); longest row label "MISC (1)".
    # width = 40 * (0.3 + 0.075 * 8 + 4 * 0.5 + 0.2) = 124; height = 40 * (0.4 + 2 * (0.35 + 0.25 + 4 * 0.5) + 0.2
    # + 0.75 (the colour bar) + 0.35) = 276
    assert png_size(out) == (124, 276) == heatmap_size(data, cell=0.5, dpi=40)
    written = json.loads(out.with_suffix(".json").read_text())
    assert [panel["view"] for panel in written["panels"]] == ["prefix", "type"]
    for panel in written["panels"]:
        view = stats["labels"][panel["view"]]
        assert panel["labels"] == view["labels"] and panel["counts"] == view["counts"]
        assert panel["p_one"] == [view["p_one_given_label"][label] for label in panel["labels"]]
    types = written["panels"][1]
    assert dict(zip(types["labels"], types["p_one"]))["PER"] == [1.0, 1.0, 0.0, 0.0]


def test_heatmap_views_and_label_cap(ner_codes, parse_codes, tmp_path):
    stats = code_statistics(read_codes_corpus(str(ner_codes)))
    data = write_heatmap(stats, str(tmp_path / "tag.png"), views=["tag"], max_labels=2)
    assert data["panels"][0]["labels"] == ["O", "B-PER"] and data["panels"][0]["num_labels"] == 5
    with pytest.raises(ValueError, match="no label view 'type'"):
        write_heatmap(code_statistics(read_codes_corpus(str(parse_codes))), str(tmp_path / "x.png"), views=["type"])
    assert png_size(tmp_path / "tag.png") == tuple(data["size"])


def test_few_word_labels_are_faded_and_the_colour_bar_says_what_the_colour_means(ner_codes):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bitcode_allennlp.bits.heatmap import COLOUR_BAR_TITLE, FEW_WORDS, _draw_panel, heatmap_data, heatmap_figure

    stats = code_statistics(read_codes_corpus(str(ner_codes)))
    panel = heatmap_data(stats, views=["tag"])["panels"][0]
    panel = {**panel, "counts": [FEW_WORDS - 1] + [FEW_WORDS] * (len(panel["counts"]) - 1)}  # only row 0 is few
    figure = Figure()
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0.2, 0.2, 0.7, 0.7))
    _draw_panel(axes, panel, 4, 8.0)
    names = [label.get_text() for label in axes.get_yticklabels()]
    assert names == [f"{label} ({count:,})" for label, count in zip(panel["labels"], panel["counts"])]  # the counts
    hatched = [patch for patch in axes.patches if patch.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_y() == -0.5  # row 0 only
    grey = [label.get_color() for label in axes.get_yticklabels()]
    assert grey[0] == "0.45" and set(grey[1:]) != {"0.45"}
    figure = heatmap_figure(heatmap_data(stats), cell=0.5, dpi=40)
    colour_bar = figure.axes[-1]
    assert colour_bar.get_title(loc="left") == COLOUR_BAR_TITLE == "colour: P(bit i = 1 | gold label), in %"
    assert [tick.get_text() for tick in colour_bar.get_xticklabels()] == ["0", "25", "50", "75", "100"]
    assert len(figure.axes) == 3  # prefix, type, the colour bar
