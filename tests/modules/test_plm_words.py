"""The `plm_words` indexer and embedder on every PLM family of fixtures/transformers/: the pieces are those of the
running text, each word's pieces spell the word, the word vectors are a direct Hugging Face forward pass averaged per
word, long sentences are read in windows (a causal PLM's codes of a prefix are the first of the whole), words with no
piece get the learned empty-word vector, alone or in a batch."""
import re
import unicodedata

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from transformers import AutoModel, AutoTokenizer

from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer, pieces_to_words, window_plan
from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder
from tests.conftest import FAMILIES, FIXTURES, family_path

SENTENCES = [
    "Obama visits Berlin today , says @BBCNews 😀 .".split(),
    ["Zoë", "naïve", "e\u0301", "co\u200bop", "MH17", "don't", "[SEP]", "<s>", "<|endoftext|>", "x"],
    "The quick brown fox jumps over the lazy dog".split(),
]
ZERO_PIECES = ["\u200b", "\ufe0f", "\u0301", ""]  # words that some tokenizers turn into no piece


def batch_tensors(indexer, sentences):
    instances = [Instance({"tokens": TextField([Token(w) for w in words], {"tokens": indexer})})
                 for words in sentences]
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["tokens"]["tokens"]


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    return request.param, family_path(request.param)


def test_pieces_to_words_gives_a_leading_marker_to_the_next_word():
    words = ["New", "York", "", "x"]  # text "New York  x"
    # "New" (0, 3); "ĠYork" with its space (3, 8); an empty piece at the double space; "▁x" with its space (9, 11)
    assert pieces_to_words(words, [(0, 3), (3, 8), (9, 9), (9, 11)]) == [0, 1, 3, 3]
    assert pieces_to_words(["a", "b"], [(2, 3), (0, 1)]) == [1, 1]  # never backwards: pieces stay contiguous


@pytest.mark.parametrize("causal", [False, True])
def test_window_plan(causal):
    for n, size, stride in [(1, 4, 2), (4, 4, 2), (5, 4, 2), (23, 6, 3), (23, 6, 6), (40, 7, 1)]:
        starts, source = window_plan(n, size, stride, causal)
        assert starts[0] == 0 and starts[-1] + size >= n and len(source) == n
        assert all(starts[k] <= t < starts[k] + size for t, k in enumerate(source))  # inside its window
        if causal:  # the earliest window: depends on the position only, and the most left context
            assert all(k == 0 or t - starts[k] >= size - stride for t, k in enumerate(source))
            for m in range(1, n):
                assert window_plan(m, size, stride, causal)[1] == source[:m]
        else:  # no window gives a piece more context on its poorer side
            for t, k in enumerate(source):
                room = [min(t - s, min(s + size, n) - 1 - t) for s in starts if s <= t < s + size]
                assert min(t - starts[k], min(starts[k] + size, n) - 1 - t) == max(room)


def test_pieces_are_the_running_text_and_spell_each_word(family):
    name, path = family
    indexer = PlmWordsIndexer(str(path))
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    normalizer = tokenizer.backend_tokenizer.normalizer
    unk = tokenizer.unk_token_id
    for words in SENTENCES:
        ids, owners = indexer.word_pieces(words)
        running = tokenizer(" ".join(words), add_special_tokens=False, split_special_tokens=True)["input_ids"]
        assert ids == running, name
        assert owners == sorted(owners) and len(owners) == len(ids)
        for index, word in enumerate(words):
            pieces = [i for i, owner in zip(ids, owners) if owner == index]
            if unk is not None and unk in pieces:
                continue
            expected = normalizer.normalize_str(word) if normalizer is not None else word
            spelled = tokenizer.decode(pieces, clean_up_tokenization_spaces=False)
            # decoders put back what normalizers take away only as far as the text allows: compare NFKD letters
            nfkd = unicodedata.normalize
            assert squeeze(nfkd("NFKD", spelled)) == squeeze(nfkd("NFKD", expected)), (
                name, word, tokenizer.convert_ids_to_tokens(pieces))


def test_byte_level_bpe_gets_the_mid_sentence_marker():
    """The bug AllenNLP's mismatched indexer has on RoBERTa: each word tokenized alone, as if it began the text."""
    path = family_path("tiny-roberta")
    indexer = PlmWordsIndexer(str(path))
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    ids, owners = indexer.word_pieces(["Obama", "visits", "Berlin"])
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert [p for p, o in zip(pieces, owners) if o == 1][0].startswith("Ġ")
    assert [p for p, o in zip(pieces, owners) if o == 0][0] == pieces[0] and not pieces[0].startswith("Ġ")
    alone = tokenizer.tokenize("visits")
    assert not alone[0].startswith("Ġ")  # what per-word tokenization gives instead


def test_word_vectors_equal_a_direct_forward_pass(family):
    name, path = family
    indexer = PlmWordsIndexer(str(path))
    embedder = PlmWordsEmbedder(str(path)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path)).eval()
    tensors = batch_tensors(indexer, SENTENCES)
    with torch.no_grad():
        vectors = embedder(**tensors)  # (batch, words, d)
    for row, words in enumerate(SENTENCES):
        encoding = tokenizer(" ".join(words), return_tensors="pt", split_special_tokens=True)
        with torch.no_grad():
            hidden = model(**encoding).last_hidden_state[0]  # (pieces + specials, d)
        text_positions = [i for i, s in enumerate(encoding.sequence_ids()) if s is not None]
        # an independent split into words: how many pieces each prefix of the sentence has
        bounds = [len(tokenizer(" ".join(words[:i]), add_special_tokens=False, split_special_tokens=True)["input_ids"])
                  if i else 0 for i in range(len(words) + 1)]
        for index in range(len(words)):
            positions = text_positions[bounds[index]: bounds[index + 1]]
            if positions:
                expected = hidden[positions].mean(0)
                assert torch.allclose(vectors[row, index], expected, atol=1e-4), (name, words[index])
        assert not torch.isnan(vectors).any()


def test_words_with_no_piece_get_the_empty_word_vector_alone_and_in_a_batch(family):
    name, path = family
    indexer = PlmWordsIndexer(str(path))
    embedder = PlmWordsEmbedder(str(path)).eval()
    with torch.no_grad():
        embedder.empty_word.fill_(0.5)
    for sentences in ([ZERO_PIECES], [ZERO_PIECES, SENTENCES[0]], [[""]]):
        tensors = batch_tensors(indexer, sentences)
        with torch.no_grad():
            vectors = embedder(**tensors)
        assert vectors.shape[:2] == (len(sentences), max(map(len, sentences))) and not torch.isnan(vectors).any()
        _, owners = indexer.word_pieces(sentences[0])
        for index in range(len(sentences[0])):
            if index not in owners:
                assert torch.all(vectors[0, index] == 0.5), (name, sentences[0][index])


def test_long_sentences_are_read_in_windows(family):
    name, path = family
    words = (SENTENCES[0] + SENTENCES[2]) * 6  # about 150 pieces
    indexer = PlmWordsIndexer(str(path), max_length=24)
    embedder = PlmWordsEmbedder(str(path), max_length=24).eval()
    model = AutoModel.from_pretrained(str(path)).eval()
    tensors = batch_tensors(indexer, [words, words[:7]])
    assert tensors["token_ids"].size(1) > 24
    with torch.no_grad():
        vectors = embedder(**tensors)
    assert vectors.shape[:2] == (2, len(words)) and not torch.isnan(vectors).any()
    # each piece as a direct forward pass of its window (the template's special tokens around the window's pieces)
    ids, owners = indexer.word_pieces(words)
    size = 24 - len(indexer._start_ids) - len(indexer._end_ids)
    starts, source = window_plan(len(ids), size, max(1, size // 2), indexer._causal)
    windows = {}
    for k in set(source):
        window = indexer._start_ids + ids[starts[k]: starts[k] + size] + indexer._end_ids
        with torch.no_grad():
            windows[k] = model(input_ids=torch.tensor([window])).last_hidden_state[0]  # (window, d)
    states = [windows[k][len(indexer._start_ids) + t - starts[k]] for t, k in enumerate(source)]
    for index in range(len(words)):
        mine = [state for state, owner in zip(states, owners) if owner == index]
        if mine:
            assert torch.allclose(vectors[0, index], torch.stack(mine).mean(0), atol=1e-4), (name, index)
    if indexer._causal:  # a prefix's vectors are the first vectors of the whole sentence, windows and all
        for cut in (5, 40, 61, len(words) - 1):
            with torch.no_grad():
                prefix = embedder(**batch_tensors(indexer, [words[:cut]]))
            assert torch.allclose(prefix[0], vectors[0, :cut], atol=1e-5), (name, cut)


def test_max_length_none_is_the_tokenizers_own_window():
    path = family_path("tiny-bert")
    assert PlmWordsIndexer(str(path), max_length=None).max_length == 512
    assert PlmWordsIndexer(str(path), max_length=4096).max_length == 512
    with pytest.raises(ConfigurationError, match="leaves no room"):
        PlmWordsIndexer(str(path), max_length=2)


def test_layers(family):
    name, path = family
    indexer = PlmWordsIndexer(str(path))
    tensors = batch_tensors(indexer, SENTENCES[:1])
    model = AutoModel.from_pretrained(str(path)).eval()
    layers = model.config.num_hidden_layers
    outputs = {}
    for layer in ("last", 0, 1, -1, "mix", "1"):
        embedder = PlmWordsEmbedder(str(path), layer=layer).eval()
        with torch.no_grad():
            outputs[layer] = embedder(**tensors)
    assert torch.allclose(outputs[1], outputs["1"])
    assert not torch.allclose(outputs[0], outputs[1])
    if layers == 2:
        assert not torch.allclose(outputs["mix"], outputs[1])
    for bad in (layers + 1, -layers - 2, "middle"):
        with pytest.raises(ConfigurationError, match="layer"):
            PlmWordsEmbedder(str(path), layer=bad)


def slow_tokenizer_class(name):
    """The Python ("slow") tokenizer class of a fixture family: transformers 4's `BertTokenizer` / `GPT2Tokenizer`;
    transformers 5 made those fast and keeps a slow BERT only as `BertTokenizerLegacy` (no slow GPT-2)."""
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        return getattr(transformers, "BertTokenizer" if name == "tiny-bert" else "GPT2Tokenizer")
    if name == "tiny-gpt2":
        pytest.skip("transformers 5 has no slow GPT-2 tokenizer")
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    return BertTokenizerLegacy


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-gpt2"])
def test_slow_tokenizers_fall_back_to_one_call_per_word(name, monkeypatch):
    path = family_path(name)
    fast = PlmWordsIndexer(str(path))
    slow = slow_tokenizer_class(name).from_pretrained(str(path))
    assert not slow.is_fast
    monkeypatch.setattr("bitcode_allennlp.data.token_indexers.plm_words.load_tokenizer", lambda *a, **k: slow)
    fallback = PlmWordsIndexer(str(path))
    assert not fallback._fast
    assert (fallback._start_ids, fallback._end_ids) == (fast._start_ids, fast._end_ids)
    words = SENTENCES[2]
    assert fallback.word_pieces(words) == fast.word_pieces(words)


def test_every_family_has_a_fixture():
    made = sorted(p.name for p in (FIXTURES / "transformers").iterdir() if (p / "config.json").is_file())
    assert made == sorted(FAMILIES)


@pytest.mark.parametrize("value, expected", [("none", None), ("OFF", None), ("64", 64)])
def test_max_length_variable_can_be_switched_off(monkeypatch, value, expected):
    from allennlp.common import Params

    from tests.conftest import CONFIGS

    monkeypatch.setenv("MAX_LENGTH", value)
    monkeypatch.setenv("PLM_LAYER", "-2")
    for config in ("ner_hash.jsonnet", "parse_hash.jsonnet", "parse_hash_incremental.jsonnet"):
        params = Params.from_file(str(CONFIGS / config))
        indexer = params["dataset_reader"]["token_indexers"]["tokens"].as_dict()
        embedder = params["model"]["text_field_embedder"]["token_embedders"]["tokens"].as_dict()
        assert indexer["type"] == embedder["type"] == "plm_words"
        assert indexer["max_length"] == embedder["max_length"] == expected and embedder["layer"] == "-2"
    built = PlmWordsIndexer(**{k: v for k, v in indexer.items() if k != "type"})
    assert built.max_length == (expected or 512)  # the tiny GPT-2's own window when switched off


def test_a_tokenizer_without_model_max_length_gets_the_models_positions(tmp_path):
    """RoBERTa's 514 positions start after its padding index: 512 to use; a longer sentence is read in windows."""
    import json
    import shutil

    folder = tmp_path / "roberta"
    shutil.copytree(family_path("tiny-roberta"), folder)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    settings.pop("model_max_length", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    assert AutoTokenizer.from_pretrained(str(folder)).model_max_length > 10 ** 6  # transformers' "not set"
    indexer = PlmWordsIndexer(str(folder), max_length=None)
    embedder = PlmWordsEmbedder(str(folder), max_length=None).eval()
    assert indexer.max_length == embedder._window == 512
    words = ["Berlin", "visits"] * 400  # 800 pieces and more
    with torch.no_grad():
        vectors = embedder(**batch_tensors(indexer, [words]))
    assert vectors.shape[1] == len(words) and not torch.isnan(vectors).any()
