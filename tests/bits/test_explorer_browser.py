"""The code explorer in a real browser (headless Chromium through Selenium), as a user sees it: every view on NER, POS
and parser codes without a console error; a clicked word lists the neighbours `allennlp bits search` gives; the bit
view's label counts are `bits stats`'; the diff view colours exactly the differing bits; the served page encodes
typed sentences as `allennlp predict` does.

Without Chromium these tests skip, unless BITCODE_BROWSER_TESTS=required (CI, `.ci/run`, installs Chromium and
sets it), where a missing browser fails them."""
import os
import threading

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.diff import align
from bitcode_allennlp.bits.explore import build_explorer
from bitcode_allennlp.bits.index import HammingIndex
from bitcode_allennlp.bits.stats import code_statistics
from bitcode_allennlp.common.code_format import hex_to_int
from tests.conftest import FIXTURES

CODES = FIXTURES / "data" / "codes"
VIEWS = ["#corpus", "#corpus?page=2", "#corpus?label=tag:O&prefix=5", "#bits", "#bits?bit=3&label=O", "#code/{code}",
         "#word/{word}", "#diff?a=0&b=1", "#trees?s=0"]


@pytest.fixture(scope="module")
def browser():
    from bitcode_allennlp.bits import explore_browser

    try:
        driver = explore_browser.start_browser()
    except FileNotFoundError as error:
        if os.environ.get("BITCODE_BROWSER_TESTS") == "required":
            pytest.fail(f"BITCODE_BROWSER_TESTS=required but {error}")
        pytest.skip(str(error))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def explorers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explorers")
    for task in ("ner", "pos", "parse"):
        build_explorer(str(CODES / f"{task}.train.jsonl"), str(folder / task))
    return folder


def url(explorers, task, fragment="#corpus"):
    return (explorers / task / "index.html").as_uri() + fragment


def view_text(browser):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "view").text


@pytest.mark.parametrize("task", ["ner", "pos", "parse"])
def test_every_view_opens_without_a_console_error(browser, explorers, task):
    from bitcode_allennlp.bits import explore_browser as eb

    corpus = read_codes_corpus(str(CODES / f"{task}.train.jsonl"))
    code = format(int(corpus.codes[5]), "06x")
    eb.open_page(browser, url(explorers, task))
    eb.console_errors(browser)
    for fragment in VIEWS:
        eb.go(browser, fragment.format(code=code, word=corpus.word(5)))
        text = view_text(browser)
        assert browser.find_elements("css selector", "#view .error") == [], (fragment, text[:300])
        assert eb.console_errors(browser) == [], fragment
    eb.go(browser, f"#code/{code}")
    assert f"{int(np.sum(corpus.codes == corpus.codes[5]))} words carry it" in view_text(browser)


def test_clicking_a_word_lists_the_neighbours_of_bits_search(browser, explorers):
    from bitcode_allennlp.bits import explore_browser as eb

    eb.open_page(browser, url(explorers, "ner"))
    tokens = browser.find_elements("css selector", ".sentence[data-sid='0'] .tok")
    clicked = tokens[2]
    code, word = clicked.get_attribute("data-code"), clicked.get_attribute("data-word")
    eb.click(browser, clicked)
    assert browser.current_url.endswith(f"#word/{word}?code={code}")
    rows = browser.find_elements("css selector", "#neighbours tr[data-entry]")
    shown = [(int(row.get_attribute("data-entry")), int(row.find_elements("css selector", "td")[1].text),
              row.find_element("css selector", "td.word").text) for row in rows]
    index = HammingIndex.from_corpus(read_codes_corpus(str(CODES / "ner.train.jsonl")))
    indices, distances = index.search(hex_to_int(code, 24), 10)
    expected = [(int(i), int(d), index.hit(int(i))["word"]) for i, d in zip(indices[0], distances[0])]
    assert shown == expected and len(shown) == 10


@pytest.mark.parametrize("task, view", [("ner", "type"), ("ner", "tag"), ("pos", "tag"), ("parse", "tag")])
def test_the_bit_view_counts_are_those_of_bits_stats(browser, explorers, task, view):
    from bitcode_allennlp.bits import explore_browser as eb

    corpus = read_codes_corpus(str(CODES / f"{task}.train.jsonl"))
    labels = code_statistics(corpus)["labels"][view]
    eb.open_page(browser, url(explorers, task, f"#bits?view={view}&bit=7"))
    rows = browser.find_elements("css selector", "#heatmap tr[data-label]")
    shown = {row.get_attribute("data-label"): int(row.find_element("css selector", "td.count").text.replace(",", ""))
             for row in rows}
    assert shown == dict(zip(labels["labels"], labels["counts"]))
    ones = {row.get_attribute("data-label"): int(row.find_element("css selector", "td.one").text.replace(",", ""))
            for row in browser.find_elements("css selector", "#bit-labels tr[data-label]")}
    bit7 = (corpus.codes >> np.uint64(24 - 1 - 7)) & np.uint64(1)
    names = corpus.labels[view].strings(range(len(corpus)))
    assert ones == {label: int(sum(b for b, n in zip(bit7, names) if n == label)) for label in labels["labels"]}
    cell = browser.find_element("css selector", f"#heatmap tr[data-label='{labels['labels'][0]}'] td[data-bit='7']")
    eb.click(browser, cell)
    assert browser.find_elements("css selector", "#cell-words tr")


def test_the_diff_view_colours_exactly_the_differing_bits(browser, explorers):
    from bitcode_allennlp.bits import explore_browser as eb

    lines = read_codes_corpus(str(CODES / "ner.train.jsonl")).sentences
    eb.open_page(browser, url(explorers, "ner", "#diff?a=3&b=4"))
    import json

    raw = [json.loads(line) for line in (CODES / "ner.train.jsonl").read_text().splitlines() if line.strip()]
    a, b = raw[3], raw[4]
    assert [s["words"] for s in lines[3:5]] == [a["words"], b["words"]]
    groups = browser.find_elements("css selector", "#diff-table tbody")
    pairs = [(g.get_attribute("data-a"), g.get_attribute("data-b")) for g in groups]
    assert pairs == [(str(i) if i is not None else None, str(j) if j is not None else None)
                     for i, j in align(a["words"], b["words"])]
    compared = 0
    for group, (i, j) in zip(groups, align(a["words"], b["words"])):
        if i is None or j is None:
            continue
        xor = hex_to_int(a["codes"][i], 24) ^ hex_to_int(b["codes"][j], 24)
        expected = {bit for bit in range(24) if xor >> (23 - bit) & 1}
        marked_a = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", ".row-a span.da")}
        marked_b = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", ".row-b span.db")}
        assert marked_a == marked_b == expected
        compared += 1
    assert compared >= 3


def test_the_trees_view_draws_the_tree_with_a_code_under_each_word(browser, explorers):
    from bitcode_allennlp.bits import explore_browser as eb

    import json

    first = json.loads((CODES / "parse.train.jsonl").read_text().splitlines()[0])
    eb.open_page(browser, url(explorers, "parse", "#trees?s=0"))
    leaves = browser.find_elements("css selector", "#tree .leaf")
    assert [leaf.find_element("css selector", ".w").text for leaf in leaves] == first["words"]
    assert [leaf.find_element("css selector", ".code").text for leaf in leaves] == first["codes"]
    labels = [node.text for node in browser.find_elements("css selector", "#tree .label")]
    assert labels[0] == "TOP" and "NP" in labels


def test_the_served_page_encodes_typed_sentences_as_allennlp_predict(browser, explorers, ner_hash_archive, tmp_path):
    from bitcode_allennlp.bits import explore_browser as eb
    from bitcode_allennlp.bits.diff import diff_codes
    from bitcode_allennlp.bits.explore_server import make_server

    server = make_server(str(explorers / "ner"), ner_hash_archive, port=0, threads=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        eb.open_page(browser, base + "#type?text=Obama%20visits%20Berlin%20today")
        eb.console_errors(browser)
        predictor = server.RequestHandlerClass.func.model.predictor
        predicted = predictor.predict_json({"sentence": "Obama visits Berlin today"})
        tokens = browser.find_elements("css selector", "#typed .tok")
        assert [t.get_attribute("data-code") for t in tokens] == predicted["codes"]
        assert [t.get_attribute("data-word") for t in tokens] == predicted["words"]
        eb.go(browser, "#diff?ta=I%20love%20Paris&tb=I%20love%20Paris%20Hilton")
        model = server.RequestHandlerClass.func.model
        a, b = model.encode(["I love Paris", "I love Paris Hilton"])
        expected = diff_codes(a.words, a.codes, b.words, b.codes, 24).pairs
        groups = browser.find_elements("css selector", "#diff-table tbody")
        assert len(groups) == len(expected)
        for group, pair in zip(groups, expected):
            if pair.index_a is not None and pair.index_b is not None:
                marked = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", "span.da")}
                assert marked == set(pair.differing)
        assert eb.console_errors(browser) == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_screenshot_shows_the_page(browser, explorers, tmp_path):
    from bitcode_allennlp.bits import explore_browser as eb

    eb.open_page(browser, url(explorers, "ner", "#word/" + read_codes_corpus(str(CODES / "ner.train.jsonl")).word(0)))
    path = tmp_path / "explorer.png"
    browser.save_screenshot(str(path))
    from PIL import Image

    image = Image.open(path)
    assert image.size[0] >= 1000 and len(set(image.convert("L").getdata())) > 20  # not a blank page


LONG = 20_000
"""Words of the long sentence below: the page lays out at most `MAX_SENTENCE_WORDS` (500) of one sentence."""


@pytest.fixture(scope="module")
def long_explorer(tmp_path_factory):
    """A parser corpus whose sentence 0 has 20,000 words (a flat tree, each word its own code), then a short one."""
    import json

    folder = tmp_path_factory.mktemp("long")
    words = [f"w{i}" for i in range(LONG)]
    lines = [{"words": words, "codes": [format(i * 7919 % 2 ** 24, "06x") for i in range(LONG)], "num_bits": 24,
              "tree": "(TOP (S " + " ".join(f"(NN {word})" for word in words) + "))"},
             {"words": ["w1", "b"], "codes": ["001eef", "000002"], "num_bits": 24, "tree": "(TOP (S (NN w1) (NN b)))"}]
    (folder / "long.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    build_explorer(str(folder / "long.jsonl"), str(folder / "long"))
    return folder


def test_a_sentence_of_20000_words_renders_in_bounded_time_and_keeps_its_words(browser, long_explorer):
    from bitcode_allennlp.bits import explore_browser as eb

    browser.set_page_load_timeout(20)
    eb.open_page(browser, url(long_explorer, "long"), timeout=20)  # before the bound: the tab hung
    box = ".sentence[data-sid='0']"
    tokens = browser.find_elements("css selector", f"{box} .tok")
    assert [t.get_attribute("data-pos") for t in tokens] == [str(i) for i in range(500)]
    more = browser.find_element("css selector", f"{box} .more")
    assert more.get_attribute("data-hidden") == str(LONG - 500) and "19,500 more words" in more.text
    assert len(browser.find_elements("css selector", ".sentence[data-sid='1'] .tok")) == 2

    eb.go(browser, "#corpus?word=w15000", timeout=20)  # a hit deep in the sentence is laid out, with its neighbours
    assert "1 words in 1 sentences match" in view_text(browser)
    hits = browser.find_elements("css selector", f"{box} .tok.hit")
    assert [h.get_attribute("data-word") for h in hits] == ["w15000"]
    shown = [int(t.get_attribute("data-pos")) for t in browser.find_elements("css selector", f"{box} .tok")]
    assert len(shown) == 500 and set(range(14997, 15004)) <= set(shown)
    eb.go(browser, "#corpus?word=w1", timeout=20)  # the data keeps every word: both sentences match
    assert "2 words in 2 sentences match" in view_text(browser)

    eb.go(browser, "#trees?s=0", timeout=20)
    assert browser.find_elements("css selector", "#tree") == []
    assert "A tree of 20,000 words: the tree view draws trees of at most 500 words" in view_text(browser)
    assert len(browser.find_elements("css selector", f"{box} .tok")) == 500
    eb.go(browser, "#trees?s=1", timeout=20)
    assert len(browser.find_elements("css selector", "#tree .leaf")) == 2

    eb.go(browser, "#diff?a=0&b=0", timeout=20)
    assert "sentence A (0) has 20,000 words: the diff compares its first 500" in view_text(browser)
    assert len(browser.find_elements("css selector", "#diff-table tbody")) == 500
    eb.go(browser, "#word/w19999", timeout=20)
    assert browser.find_element("css selector", "#word-summary").text.startswith("1 occurrences")
    assert eb.console_errors(browser) == []


def test_a_word_with_a_trailing_nul_is_a_word_of_its_own(browser, tmp_path):
    import json

    from bitcode_allennlp.bits import explore_browser as eb

    line = {"words": ["Paris", "Paris\x00", "Paris"], "codes": ["00000a", "00000b", "00000a"], "num_bits": 24}
    (tmp_path / "nul.jsonl").write_text(json.dumps(line) + "\n")
    build_explorer(str(tmp_path / "nul.jsonl"), str(tmp_path / "nul"))
    eb.open_page(browser, url(tmp_path, "nul", "#word/Paris%00"))
    assert browser.find_element("css selector", "#word-summary").text.startswith("1 occurrences, 1 distinct codes")
    eb.go(browser, "#word/Paris")
    assert browser.find_element("css selector", "#word-summary").text.startswith("2 occurrences, 1 distinct codes")
    eb.go(browser, "#code/00000b")
    words = browser.execute_script("return Array.from(document.querySelectorAll('.code-words a'), a => a.textContent)")
    assert words == ["Paris\x00"]
