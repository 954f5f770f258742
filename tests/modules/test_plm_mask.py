"""The `plm_words` embedder's `mask_probability` (random [MASK] pieces, Wang & Utiyama 2024): untouched outputs in
eval mode and at 0; in training each word piece, and nothing else, becomes the mask token with that probability, a
fresh draw each call, against a naive reference; no mask token, no option; the `MASK_PROB` config variable."""
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from transformers import AutoTokenizer

from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer
from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder, mask_pieces
from tests.conftest import family_path
from tests.modules.test_plm_words import SENTENCES, batch_tensors

WORDS = (SENTENCES[0] + SENTENCES[2]) * 4  # about 100 pieces: several windows of 24


def reference_ids(tensors, mask_id):
    """Naive reference: every word piece (`piece_index` where `piece_mask`) set to `mask_id`, one by one."""
    ids = tensors["token_ids"].clone()
    for row in range(ids.size(0)):
        for column in range(tensors["piece_index"].size(1)):
            if tensors["piece_mask"][row, column]:
                ids[row, tensors["piece_index"][row, column]] = mask_id
    return ids


@pytest.mark.parametrize("name, max_length", [("tiny-bert", None), ("tiny-bert", 24), ("tiny-roberta", 24)])
def test_nearly_one_masks_every_word_piece_and_nothing_else(name, max_length):
    path = family_path(name)
    mask_id = AutoTokenizer.from_pretrained(str(path)).mask_token_id
    tensors = batch_tensors(PlmWordsIndexer(str(path), max_length=max_length), [WORDS, SENTENCES[1], ["x"]])
    assert not tensors["wordpiece_mask"].all() and not tensors["piece_mask"].all()  # padding in the batch
    torch.manual_seed(0)
    masked = mask_pieces(tensors["token_ids"], tensors["piece_index"], tensors["piece_mask"], mask_id, 0.999)
    assert torch.equal(masked, reference_ids(tensors, mask_id))
    kept = masked == tensors["token_ids"]  # specials ([CLS]/<s>, [SEP]/</s>, in every window) and padding
    assert kept.any(dim=1).all() and (~tensors["wordpiece_mask"] <= kept).all()


def test_the_share_of_masked_pieces_is_the_probability():
    batch, pieces = 40, 250
    token_ids = torch.arange(batch * (pieces + 2)).reshape(batch, pieces + 2) + 10  # (batch, width) all distinct
    piece_index = torch.arange(1, pieces + 1).expand(batch, -1)  # (batch, pieces) position 0 and the last: specials
    piece_mask = torch.ones(batch, pieces, dtype=torch.bool)
    piece_mask[::2, pieces // 2:] = False  # half the rows padded halfway
    torch.manual_seed(1)
    masked = mask_pieces(token_ids, piece_index, piece_mask, 3, 0.3)
    replaced = masked == 3  # (batch, width)
    share = replaced[:, 1:-1][piece_mask].float().mean().item()
    assert abs(share - 0.3) < 0.03  # about 7 standard deviations for 7500 pieces
    assert not replaced[:, 1:-1][~piece_mask].any() and not replaced[:, [0, -1]].any()
    again = mask_pieces(token_ids, piece_index, piece_mask, 3, 0.3)
    assert not torch.equal(again, masked)  # a fresh draw each call


def test_eval_mode_and_zero_give_todays_outputs():
    path = family_path("tiny-bert")
    tensors = batch_tensors(PlmWordsIndexer(str(path), max_length=24), [WORDS, SENTENCES[1]])
    plain = PlmWordsEmbedder(str(path), max_length=24)
    zero = PlmWordsEmbedder(str(path), max_length=24, mask_probability=0.0)
    masking = PlmWordsEmbedder(str(path), max_length=24, mask_probability=0.5)
    with torch.no_grad():
        assert torch.equal(masking.eval()(**tensors), plain.eval()(**tensors))  # eval mode: no mask
        torch.manual_seed(2)
        expected = plain.train()(**tensors)
        torch.manual_seed(2)
        assert torch.equal(zero.train()(**tensors), expected)  # training at 0: no draw, the same dropout


def test_training_reads_the_masked_pieces():
    path = family_path("tiny-bert")
    mask_id = AutoTokenizer.from_pretrained(str(path)).mask_token_id
    tensors = batch_tensors(PlmWordsIndexer(str(path), max_length=24), [WORDS, SENTENCES[1]])
    embedder = PlmWordsEmbedder(str(path), max_length=24, mask_probability=0.999).train()
    embedder.transformer_model.eval()  # no dropout: the mask is the only randomness
    plain = PlmWordsEmbedder(str(path), max_length=24).eval()
    with torch.no_grad():
        torch.manual_seed(0)
        outputs = embedder(**tensors)
        expected = plain(**dict(tensors, token_ids=reference_ids(tensors, mask_id)))
        assert torch.allclose(outputs, expected, atol=1e-6)
        assert not torch.allclose(outputs, plain(**tensors), atol=1e-3)
    half = PlmWordsEmbedder(str(path), max_length=24, mask_probability=0.5).train()
    half.transformer_model.eval()
    with torch.no_grad():
        assert not torch.equal(half(**tensors), half(**tensors))  # two views, two masks


def test_no_mask_token_or_a_bad_probability_fails_when_built():
    with pytest.raises(ConfigurationError, match="mask token"):
        PlmWordsEmbedder(str(family_path("tiny-gpt2")), mask_probability=0.15)
    PlmWordsEmbedder(str(family_path("tiny-gpt2")), mask_probability=0.0)  # not asked for: fine
    for bad in (1.0, -0.1, "0.1", True):
        with pytest.raises(ConfigurationError, match="mask_probability"):
            PlmWordsEmbedder(str(family_path("tiny-bert")), mask_probability=bad)


@pytest.mark.parametrize("value, expected", [(None, 0), ("0.15", 0.15)])
def test_mask_prob_variable(monkeypatch, value, expected):
    from allennlp.common import Params

    from tests.conftest import CONFIGS

    monkeypatch.delenv("FREEZE_PLM", raising=False)
    if value is None:
        monkeypatch.delenv("MASK_PROB", raising=False)
    else:
        monkeypatch.setenv("MASK_PROB", value)
    params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    embedder = params["model"]["text_field_embedder"]["token_embedders"]["tokens"].as_dict()
    assert embedder["type"] == "plm_words" and embedder["mask_probability"] == expected


def test_mask_prob_is_not_for_a_frozen_plm(monkeypatch):
    from allennlp.common import Params

    from tests.conftest import CONFIGS

    monkeypatch.setenv("FREEZE_PLM", "true")
    monkeypatch.setenv("MASK_PROB", "0.15")
    with pytest.raises(ConfigurationError, match="not with FREEZE_PLM"):
        Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    monkeypatch.setenv("MASK_PROB", "0")
    embedder = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))["model"]["text_field_embedder"]
    assert embedder["token_embedders"]["tokens"]["type"] == "frozen_plm_words"
