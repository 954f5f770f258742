"""The code explorer in a real browser (headless Chromium through Selenium), as a user sees it: every view on NER, POS
and parser codes without a console error; a clicked word lists the neighbours `allennlp bits search` gives; a word the
corpus does not have lists the corpus words nearest to its code; the bit view's label counts are `bits stats`', with
a legend, and few-word labels faded; the diff view pairs only what aligns, marks the rest on both sides, colours
exactly the differing bits and links them to their pages; the served page encodes typed sentences as `allennlp
predict` does and calls their labels predicted. The page's alignment and nearest-words functions are also run on
many inputs against naive oracles written here from their definitions.

Without Chromium these tests skip, unless BITCODE_BROWSER_TESTS=required (CI, `.ci/run`, installs Chromium and
sets it), where a missing browser fails them."""
import difflib
import os
import random
import threading

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.explore import build_explorer
from bitcode_allennlp.bits.heatmap import FEW_WORDS
from bitcode_allennlp.bits.index import HammingIndex
from bitcode_allennlp.bits.stats import code_statistics
from bitcode_allennlp.common.code_format import hex_to_int
from tests.conftest import FIXTURES

CODES = FIXTURES / "data" / "codes"
VIEWS = ["#corpus", "#corpus?page=2", "#corpus?label=tag:O&prefix=5", "#bits", "#bits?bit=3&label=O", "#code/{code}",
         "#word/{word}", "#diff?a=0&b=1", "#trees?s=0"]


@pytest.fixture(scope="module")
def browser():
    from tests.harness import browser as explore_browser

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


def page_alignment(a, b):
    """The diff view's alignment from its definition: difflib's matching blocks pair equal words; when they hold at
    least half of each sentence, one word replaced by one word between two blocks pairs too; every other word is
    unpaired (those of A, then those of B)."""
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    variants = 2 * sum(block.size for block in blocks) >= max(len(a), len(b))
    pairs, i, j = [], 0, 0
    for ai, bj, size in blocks:
        if variants and i > 0 and j > 0 and size > 0 and (ai - i, bj - j) == (1, 1):
            pairs.append((i, j))
        else:
            pairs += [(x, None) for x in range(i, ai)] + [(None, y) for y in range(j, bj)]
        pairs += [(ai + k, bj + k) for k in range(size)]
        i, j = ai + size, bj + size
    return pairs


def nearest_words(corpus, code, k=10):
    """The k distinct words nearest to `code`, by brute force: each word at its nearest occurrence (distance, then
    corpus order), as (entry, distance)."""
    best = {}
    for i in range(len(corpus)):
        key = (bin(int(corpus.codes[i]) ^ code).count("1"), i)
        best[corpus.word(i)] = min(best.get(corpus.word(i), key), key)
    return [(i, d) for d, i in sorted(best.values())[:k]]


def url(explorers, task, fragment="#corpus"):
    return (explorers / task / "index.html").as_uri() + fragment


def view_text(browser):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "view").text


@pytest.mark.parametrize("task", ["ner", "pos", "parse"])
def test_every_view_opens_without_a_console_error(browser, explorers, task):
    from tests.harness import browser as eb

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
    from tests.harness import browser as eb

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
    from tests.harness import browser as eb

    corpus = read_codes_corpus(str(CODES / f"{task}.train.jsonl"))
    labels = code_statistics(corpus)["labels"][view]
    eb.open_page(browser, url(explorers, task, f"#bits?view={view}&bit=7"))
    rows = browser.find_elements("css selector", "#heatmap tr[data-label]")
    shown = {row.get_attribute("data-label"): int(row.find_element("css selector", "td.count").text.replace(",", ""))
             for row in rows}
    assert shown == dict(zip(labels["labels"], labels["counts"]))
    few = {row.get_attribute("data-label") for row in rows if "few" in row.get_attribute("class").split()}
    assert few == {label for label, count in shown.items() if count < FEW_WORDS}  # faded: fewer than FEW_WORDS words
    legend = browser.find_element("css selector", "#heat-legend").text
    assert "P(bit i = 1 | gold label)" in legend and f"fewer than {FEW_WORDS} words" in legend
    ones = {row.get_attribute("data-label"): int(row.find_element("css selector", "td.one").text.replace(",", ""))
            for row in browser.find_elements("css selector", "#bit-labels tr[data-label]")}
    bit7 = (corpus.codes >> np.uint64(24 - 1 - 7)) & np.uint64(1)
    names = corpus.labels[view].strings(range(len(corpus)))
    assert ones == {label: int(sum(b for b, n in zip(bit7, names) if n == label)) for label in labels["labels"]}
    cell = browser.find_element("css selector", f"#heatmap tr[data-label='{labels['labels'][0]}'] td[data-bit='7']")
    eb.click(browser, cell)
    assert browser.find_elements("css selector", "#cell-words tr")


@pytest.mark.parametrize("a, b", [(3, 4), (39, 42)])
def test_the_diff_view_pairs_only_what_aligns_and_colours_exactly_the_differing_bits(browser, explorers, a, b):
    from tests.harness import browser as eb

    import json

    raw = [json.loads(line) for line in (CODES / "ner.train.jsonl").read_text().splitlines() if line.strip()]
    A, B = raw[a], raw[b]
    eb.open_page(browser, url(explorers, "ner", f"#diff?a={a}&b={b}"))
    groups = browser.find_elements("css selector", "#diff-table tbody")
    pairs = [tuple(None if g.get_attribute(key) is None else int(g.get_attribute(key)) for key in ("data-a", "data-b"))
             for g in groups]
    expected_pairs = page_alignment(A["words"], B["words"])
    assert pairs == expected_pairs
    assert all(A["words"][i] == B["words"][j] for i, j in pairs if i is not None and j is not None)  # unrelated
    compared = 0
    for group, (i, j) in zip(groups, pairs):
        if i is None or j is None:  # one row, marked, on either side
            side, other = ("A", "B") if j is None else ("B", "A")
            status = group.find_element("css selector", ".status").text
            assert status == f"only in {side}: no word of {other} aligns with it"
            assert len(group.find_elements("css selector", "tr")) == 1
            continue
        xor = hex_to_int(A["codes"][i], 24) ^ hex_to_int(B["codes"][j], 24)
        expected = [bit for bit in range(24) if xor >> (23 - bit) & 1]
        marked_a = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", ".row-a span.da")}
        marked_b = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", ".row-b span.db")}
        assert marked_a == marked_b == set(expected)
        links = group.find_elements("css selector", "a.bitlink")
        assert [int(x.get_attribute("data-bit")) for x in links] == expected
        assert all(x.get_attribute("href").endswith(f"#bits?view=type&bit={bit}") for x, bit in zip(links, expected))
        compared += 1
    assert compared == sum(i is not None and j is not None for i, j in expected_pairs) >= 2
    unaligned = {name: [int(x.get_attribute("data-i")) for x in
                        browser.find_elements("css selector", f"#sentence-{name} .unaligned")] for name in "ab"}
    assert unaligned == {"a": [i for i, j in pairs if j is None], "b": [j for i, j in pairs if i is None]}
    assert f"{len([p for p in pairs if p[1] is None])} words only in A" in view_text(browser)
    link = browser.find_element("css selector", "#diff-table a.bitlink")
    bit = link.get_attribute("data-bit")
    eb.click(browser, link)
    assert browser.find_element("css selector", "#bit-title").text == f"bit {bit}"


def test_the_diff_pairs_a_one_word_substitution_and_nothing_of_unrelated_sentences(browser, tmp_path):
    import json

    from tests.harness import browser as eb

    lines = [{"words": "John saw him .".split(), "codes": ["00000a", "00000b", "00000c", "00000d"]},
             {"words": "John saw himself .".split(), "codes": ["00000a", "00000b", "10000c", "00000d"]},
             {"words": "Rain fell on Leeds today".split(), "codes": ["000001", "000002", "000003", "000004", "000005"]}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({**line, "num_bits": 24}) + "\n" for line in lines))
    build_explorer(str(tmp_path / "c.jsonl"), str(tmp_path / "c"))
    eb.open_page(browser, url(tmp_path, "c", "#diff?a=0&b=1"))
    groups = browser.find_elements("css selector", "#diff-table tbody")
    pairs = [(g.get_attribute("data-a"), g.get_attribute("data-b")) for g in groups]
    assert pairs == [(str(i), str(i)) for i in range(4)]
    substitution = groups[2].find_element("css selector", ".row-a .status").text
    assert substitution == "a one-word substitution between equal words"
    assert groups[2].find_element("css selector", ".row-b .status").text == "1 bit differs: 3"  # 00000c / 10000c
    link = groups[2].find_element("css selector", "a.bitlink")
    assert link.get_attribute("href").endswith("#bits?bit=3")  # no label view: the bit's page without one
    eb.click(browser, link)
    assert browser.find_elements("css selector", "#bit-words tr")
    assert browser.find_elements("css selector", "#view .error") == []
    eb.go(browser, "#diff?a=0&b=2")
    groups = browser.find_elements("css selector", "#diff-table tbody")
    assert [(g.get_attribute("data-a"), g.get_attribute("data-b")) for g in groups] == \
        [(str(i), None) for i in range(4)] + [(None, str(j)) for j in range(5)]
    assert len(browser.find_elements("css selector", "#sentence-a .unaligned")) == 4
    assert len(browser.find_elements("css selector", "#sentence-b .unaligned")) == 5
    assert "0 aligned pairs" in view_text(browser) and "4 words only in A, 5 only in B" in view_text(browser)


def test_the_page_alignment_and_nearest_words_agree_with_naive_oracles(browser, explorers):
    """`align` and `nearestWords` of explorer.js, run in the page on random inputs, against the oracles above."""
    from tests.harness import browser as eb

    rng = random.Random(7)
    cases = [([rng.choice("abcd") for _ in range(rng.randint(0, 9))],
              [rng.choice("abcde") for _ in range(rng.randint(0, 9))]) for _ in range(400)]
    cases += [("John saw him .".split(), "John saw himself .".split()), ("a b c".split(), "x y z".split())]
    eb.open_page(browser, url(explorers, "ner", "#corpus"))
    got = browser.execute_script("return arguments[0].map(([a, b]) => align(a, b));", cases)
    assert [[tuple(pair) for pair in pairs] for pairs in got] == [page_alignment(a, b) for a, b in cases]
    for (a, b), pairs in zip(cases, got):  # a pair of different words is a framed one-word substitution
        for i, j in pairs:
            if i is not None and j is not None and a[i] != b[j]:
                assert [i - 1, j - 1] in pairs and [i + 1, j + 1] in pairs and a[i - 1] == b[j - 1]
    corpus = read_codes_corpus(str(CODES / "ner.train.jsonl"))
    codes = [int(corpus.codes[i]) for i in (0, 5, 77)] + [rng.getrandbits(24) for _ in range(40)]
    got = browser.execute_async_script(
        "const [codes, done] = arguments; entries().then((e) => done(codes.map((c) => "
        "nearestWords(e, Math.floor(c / 2 ** 32) >>> 0, c >>> 0, 10))));", codes)
    assert [[tuple(hit) for hit in hits] for hits in got] == [nearest_words(corpus, code) for code in codes]


def test_a_word_not_in_the_corpus_lists_the_corpus_words_nearest_to_its_code(browser, explorers):
    from tests.harness import browser as eb

    corpus = read_codes_corpus(str(CODES / "ner.train.jsonl"))
    code = 0x5A3C01
    eb.open_page(browser, url(explorers, "ner", f"#word/Zyzzyva?code={code:06x}"))
    assert browser.find_elements("css selector", "#view .error") == []
    assert "does not occur in this corpus" in browser.find_element("css selector", "#word-summary").text
    rows = browser.find_elements("css selector", "#nearest-words tr[data-entry]")
    shown = [(int(row.get_attribute("data-entry")), int(row.find_elements("css selector", "td")[1].text))
             for row in rows]
    assert shown == nearest_words(corpus, code)
    words = [row.find_element("css selector", "td.word").text for row in rows]
    assert words == [corpus.word(i) for i, _ in shown] and len(set(words)) == 10
    index = HammingIndex.from_corpus(corpus)
    indices, distances = index.search(code, 10)
    entries = browser.find_elements("css selector", "#neighbours tr[data-entry]")
    assert [int(row.get_attribute("data-entry")) for row in entries] == [int(i) for i in indices[0]]
    headers = [th.text for th in browser.find_elements("css selector", "#nearest-words th")]
    assert "gold type" in headers and "gold tag" in headers
    eb.go(browser, "#word/Zyzzyva")  # no code in the link: still says so, and how to get the nearest words
    assert "does not occur in this corpus" in browser.find_element("css selector", "#view .error").text
    eb.go(browser, f"#code/{code:06x}")  # a code no word carries: the same nearest words
    rows = browser.find_elements("css selector", "#nearest-words tr[data-entry]")
    assert [int(row.get_attribute("data-entry")) for row in rows] == [i for i, _ in shown]
    eb.go(browser, "#corpus")
    assert "gold label" in browser.find_element("css selector", "#label-note").text
    assert eb.console_errors(browser) == []


def test_the_trees_view_draws_the_tree_with_a_code_under_each_word(browser, explorers):
    from tests.harness import browser as eb

    import json

    first = json.loads((CODES / "parse.train.jsonl").read_text().splitlines()[0])
    eb.open_page(browser, url(explorers, "parse", "#trees?s=0"))
    leaves = browser.find_elements("css selector", "#tree .leaf")
    assert [leaf.find_element("css selector", ".w").text for leaf in leaves] == first["words"]
    assert [leaf.find_element("css selector", ".code").text for leaf in leaves] == first["codes"]
    labels = [node.text for node in browser.find_elements("css selector", "#tree .label")]
    assert labels[0] == "TOP" and "NP" in labels


def test_the_served_page_encodes_typed_sentences_as_allennlp_predict(browser, explorers, ner_hash_archive, tmp_path):
    from tests.harness import browser as eb
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
        assert "predicted" in browser.find_element("css selector", "#label-note").text
        assert {t.get_attribute("title") for t in browser.find_elements("css selector", "#typed .tok .t")} == \
            {"predicted label"}
        assert browser.find_element("css selector", "#typed-entities").text.startswith("predicted entities")
        obama = tokens[0]  # not a word of the corpus: its page lists the corpus words nearest to its code
        eb.click(browser, obama)
        assert "does not occur in this corpus" in browser.find_element("css selector", "#word-summary").text
        corpus = read_codes_corpus(str(CODES / "ner.train.jsonl"))
        shown = [int(row.get_attribute("data-entry"))
                 for row in browser.find_elements("css selector", "#nearest-words tr[data-entry]")]
        assert shown == [i for i, _ in nearest_words(corpus, hex_to_int(predicted["codes"][0], 24))]
        eb.go(browser, "#diff?ta=I%20love%20Paris&tb=I%20love%20Paris%20Hilton")
        model = server.RequestHandlerClass.func.model
        a, b = model.encode(["I love Paris", "I love Paris Hilton"])
        expected = diff_codes(a.words, a.codes, b.words, b.codes, 24).pairs
        groups = browser.find_elements("css selector", "#diff-table tbody")
        shown = [(g.get_attribute("data-a"), g.get_attribute("data-b")) for g in groups]
        assert shown == [(None if i is None else str(i), None if j is None else str(j))
                         for i, j in page_alignment(a.words, b.words)]
        assert len(groups) == len(expected)  # an insertion: as `bits diff` aligns it
        for group, pair in zip(groups, expected):
            if pair.index_a is not None and pair.index_b is not None:
                marked = {int(s.get_attribute("data-bit")) for s in group.find_elements("css selector", "span.da")}
                assert marked == set(pair.differing)
        assert browser.find_element("css selector", "#diff-table thead").text.count("predicted label") == 1
        assert eb.console_errors(browser) == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_screenshot_shows_the_page(browser, explorers, tmp_path):
    from tests.harness import browser as eb

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
    from tests.harness import browser as eb

    browser.set_page_load_timeout(20)
    eb.open_page(browser, url(long_explorer, "long"), timeout=20)  # before the bound: the tab hung
    box = ".sentence[data-sid='0']"
    tokens = browser.find_elements("css selector", f"{box} .tok")
    assert [t.get_attribute("data-pos") for t in tokens] == [str(i) for i in range(500)]
    more = browser.find_element("css selector", f"{box} .more")
    assert more.get_attribute("data-hidden") == str(LONG - 500) and "19,500 more words" in more.text
    assert len(browser.find_elements("css selector", ".sentence[data-sid='1'] .tok")) == 2

    eb.go(browser, "#corpus?word=w15000", timeout=20)  # a hit deep in the sentence is laid out, with its neighbours
    assert "1 word in 1 sentence match" in view_text(browser)
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

    from tests.harness import browser as eb

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
