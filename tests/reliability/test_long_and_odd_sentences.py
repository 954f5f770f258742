"""Long and odd sentences, in the tagger and the parser: longer than the PLM window (the fixture BERT has 512
positions; the plm_words embedder reads longer inputs in windows, and there is still one code per word), one word (every
pair of the hash loss is masked), and a batch of identical sentences (no NaN in the loss or the gradients)."""
import pytest
import torch
from allennlp.data import Batch
from nltk import Tree

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.modules.hash_loss import OBJECTIVES, SIMILARITIES, ContrastiveHashLoss
from tests.conftest import build

WINDOW = 512  # max_position_embeddings of the fixture BERT, and the configs' MAX_LENGTH
SENTENCE = ["Frodo", "held", "the", "ring", "."]
TREE = Tree.fromstring("(S (NP (NNP Frodo)) (VP (VBD held) (NP (DT the) (NN ring))) (. .))")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/reliability/conftest.py


def indexed(reader, sentences, trees=None):
    """Instances for word lists (with gold trees for the parser's reader), indexers applied."""
    if trees is None:
        instances = [reader.text_to_instance(words) for words in sentences]
    else:
        instances = [reader.text_to_instance(words, gold_tree=tree) for words, tree in zip(sentences, trees)]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances


def tensors(model, instances):
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    return batch.as_tensor_dict()


def assert_finite_step(output, model):
    """`output["loss"]` (and the hash loss) finite; backward gives finite gradients that reach the PLM."""
    output["loss"].backward()
    assert torch.isfinite(output["loss"]) and torch.isfinite(output["hash_loss"])
    gradients = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert all(torch.isfinite(grad).all() for grad in gradients.values())
    assert any("transformer_model" in name for name in gradients)


def long_words(count):
    return [f"w{i % 50}" for i in range(count)]  # about 3 word pieces each


def test_tagger_sentence_longer_than_the_plm_window_trains_and_gets_one_code_per_word():
    model, reader, _ = build("ner_hash.jsonnet")
    words = long_words(700)
    batch = tensors(model, indexed(reader, [words]))
    assert batch["tokens"]["tokens"]["token_ids"].shape[1] > 3 * WINDOW  # folded into 4 windows
    model.train()
    assert_finite_step(model(**batch, tags=torch.zeros(1, 700, dtype=torch.long)), model)
    model.eval()
    output = model.forward_on_instances(indexed(reader, [words]))[0]
    assert len(output["tags"]) == len(output["code_hex"]) == 700


def test_parser_300_words_longer_than_the_plm_window_train_step_and_cky():
    # Also the parser-memory benchmark's case (benchmarks/parser_memory.py): 300 words, two views, tree CRF, CKY.
    model, reader, _ = build("parse_hash.jsonnet")
    words = long_words(300)
    tree = Tree("S", [Tree("NP", [Tree("NN", [word]) for word in words[i : i + 10]]) for i in range(0, 300, 10)])
    batch = tensors(model, indexed(reader, [words], [tree]))
    assert batch["tokens"]["tokens"]["token_ids"].shape[1] > WINDOW
    assert batch["spans"].shape == (1, 2 * 300 - 1, 2)
    model.train()
    assert_finite_step(model(**batch), model)
    model.eval()
    output = model.forward_on_instances(indexed(reader, [words]))[0]
    assert len(output["code_hex"]) == 300 and len(output["spans"]) == 2 * 300 - 1
    assert Tree.fromstring(output["trees"]).leaves() == words


def test_one_word_sentences():
    # Two one-word sentences with the same word: every pair of the hash loss is masked, the loss is exactly 0.
    tagger, reader, _ = build("ner_hash.jsonnet")
    tagger.train()
    output = tagger(**tensors(tagger, indexed(reader, [["Hi"], ["Hi"]])), tags=torch.zeros(2, 1, dtype=torch.long))
    assert output["hash_loss"].item() == 0.0
    assert_finite_step(output, tagger)
    tagger.eval()
    assert len(tagger.forward_on_instances(indexed(reader, [["Hi"]]))[0]["code_hex"]) == 1

    parser, preader, _ = build("parse_hash.jsonnet")
    parser.train()
    one = Tree("NP", [Tree("NN", ["Hi"])])
    output = parser(**tensors(parser, indexed(preader, [["Hi"], ["Hi"]], [one, one])))
    assert output["hash_loss"].item() == 0.0
    assert_finite_step(output, parser)
    parser.eval()
    out = parser.forward_on_instances(indexed(preader, [["Hi"]]))[0]
    assert out["trees"].startswith("(TOP") and Tree.fromstring(out["trees"]).leaves() == ["Hi"]
    assert len(out["code_hex"]) == 1 and out["spans"] == [(0, 1)]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_hash_loss_of_one_word_and_of_all_masked_words(similarity, objective):
    loss = ContrastiveHashLoss(similarity=similarity, objective=objective)
    for words in (1, 6):  # one word; six occurrences of the same word (all pairs masked)
        s1 = torch.randn(words, 24, requires_grad=True)
        s2 = torch.randn(words, 24, requires_grad=True)
        value = loss.symmetric(s1, s2, torch.zeros(words, dtype=torch.long))
        value.backward()
        assert torch.isfinite(value) and torch.isfinite(s1.grad).all() and torch.isfinite(s2.grad).all()
        if objective == "hash" or words == 1:
            assert value.item() == pytest.approx(0.0, abs=1e-6)


def test_batch_of_identical_sentences_has_finite_loss_and_gradients():
    tagger, reader, _ = build("ner_hash.jsonnet")
    tagger.train()
    output = tagger(**tensors(tagger, indexed(reader, [SENTENCE] * 8)), tags=torch.zeros(8, 5, dtype=torch.long))
    assert_finite_step(output, tagger)

    parser, preader, _ = build("parse_hash.jsonnet")
    parser.train()
    output = parser(**tensors(parser, indexed(preader, [SENTENCE] * 8, [TREE] * 8)))
    assert_finite_step(output, parser)
