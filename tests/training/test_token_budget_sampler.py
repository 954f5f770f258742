"""Tests of TokenBudgetBatchSampler, alone, inside MultiProcessDataLoader, and with distributed sharding."""
import random
from collections import Counter

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance, Vocabulary
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.fields import LabelField, MetadataField, SequenceLabelField, TextField
from allennlp.data.samplers import BatchSampler
from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer, SingleIdTokenIndexer
from allennlp.data.tokenizers import Token

from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler
from tests.conftest import TINY_BERT
from tests.training.distributed import run_distributed


def make_instance(index, length, extra_text=0):
    tokens = TextField([Token(f"w{i % 7}") for i in range(length)], {"tokens": SingleIdTokenIndexer()})
    fields = {
        "id": MetadataField(index),
        "label": LabelField("x"),
        "tokens": tokens,
        "tags": SequenceLabelField(["T"] * length, tokens),
    }
    if extra_text:  # a second, longer TextField after the first (e.g. wordpieces)
        fields["pieces"] = TextField([Token("p")] * (length + extra_text), {"tokens": SingleIdTokenIndexer()})
    return Instance(fields)


def random_lengths(seed, num=200, low=1, high=60):
    rng = random.Random(seed)
    return [rng.randint(low, high) for _ in range(num)]


def words(batch, lengths):
    return sum(lengths[i] for i in batch)


def check_epoch(batches, lengths, sampler, expect_all=True):
    seen = Counter(i for batch in batches for i in batch)
    if expect_all:
        assert seen == Counter(range(len(lengths))), "every instance exactly once"
    else:
        assert max(seen.values()) == 1
    for batch in batches:
        assert batch, "no empty batch"
        if len(batch) == 1:
            continue  # a single sentence may be longer than the budget
        if sampler.count == "words":
            assert words(batch, lengths) <= sampler.max_tokens
        else:
            assert len(batch) * max(lengths[i] for i in batch) <= sampler.max_tokens


@pytest.mark.parametrize("count", ["words", "padded"])
@pytest.mark.parametrize("shuffle,sort_by_length", [(True, True), (True, False), (False, True), (False, False)])
def test_every_instance_once_and_budget(count, shuffle, sort_by_length):
    lengths = random_lengths(1) + [150, 500]  # two longer than the budget
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=128, count=count, shuffle=shuffle, sort_by_length=sort_by_length)
    for epoch in range(3):
        batches = list(sampler.get_batch_indices(instances))
        check_epoch(batches, lengths, sampler)
        assert [len(lengths) - 2] in batches and [len(lengths) - 1] in batches  # over-long: alone
        if not shuffle and not sort_by_length:
            assert [i for batch in batches for i in batch] == list(range(len(lengths)))  # data order kept


@pytest.mark.parametrize("count", ["words", "padded"])
def test_greedy_batches_are_full(count):
    lengths = random_lengths(2) + [400]
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=256, count=count, shuffle=False)
    batches = list(sampler.get_batch_indices(instances))  # packing order (no shuffle)

    def cost(batch):
        if count == "words":
            return words(batch, lengths)
        return len(batch) * max(lengths[i] for i in batch)

    for batch, following in zip(batches, batches[1:]):
        if lengths[following[0]] > 256:
            continue  # an over-long sentence closes the batch before it
        # greedy: the next sentence did not fit
        assert cost(batch + following[:1]) > 256
    if count == "words":
        # next-fit bound: any two consecutive batches hold more than the budget
        assert len(batches) <= 2 * sum(min(n, 256) for n in lengths) / 256 + 2


def test_shuffled_batches_are_full_too():
    lengths = random_lengths(3, num=500)
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=1024)
    batches = list(sampler.get_batch_indices(instances))
    check_epoch(batches, lengths, sampler)
    fill = sum(lengths) / (len(batches) * 1024)
    assert fill > 0.9, fill  # sorted lengths pack tightly


def test_sorting_by_length_groups_similar_lengths():
    lengths = random_lengths(4, num=300)
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sorted_sampler = TokenBudgetBatchSampler(max_tokens=300, count="padded")
    unsorted_sampler = TokenBudgetBatchSampler(max_tokens=300, count="padded", sort_by_length=False)

    def padding(batches):
        return sum(len(b) * max(lengths[i] for i in b) - words(b, lengths) for b in batches)

    random.seed(0)
    sorted_batches = list(sorted_sampler.get_batch_indices(instances))
    unsorted_batches = list(unsorted_sampler.get_batch_indices(instances))
    assert padding(sorted_batches) < padding(unsorted_batches) / 3
    assert len(sorted_batches) < len(unsorted_batches)


def test_deterministic_under_a_seed():
    lengths = random_lengths(5)
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=200)
    random.seed(13)
    first = [list(sampler.get_batch_indices(instances)) for _ in range(2)]
    random.seed(13)
    second = [list(sampler.get_batch_indices(instances)) for _ in range(2)]
    assert first == second
    assert first[0] != first[1]  # but epochs differ
    random.seed(14)
    assert list(sampler.get_batch_indices(instances)) != first[0]
    # without shuffling there is no randomness at all
    fixed = TokenBudgetBatchSampler(max_tokens=200, shuffle=False)
    random.seed(1)
    a = list(fixed.get_batch_indices(instances))
    random.seed(2)
    assert list(fixed.get_batch_indices(instances)) == a


def test_drop_last_and_over_long():
    lengths = [10, 10, 10, 10, 10, 3]
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    keep = TokenBudgetBatchSampler(max_tokens=20, shuffle=False, sort_by_length=False)
    assert list(keep.get_batch_indices(instances)) == [[0, 1], [2, 3], [4, 5]]
    drop = TokenBudgetBatchSampler(max_tokens=20, shuffle=False, sort_by_length=False, drop_last=True)
    assert list(drop.get_batch_indices(instances)) == [[0, 1], [2, 3]]
    assert drop.get_num_batches(instances) == 2
    # a last batch that reaches the budget exactly is complete
    exact = [make_instance(i, 10) for i in range(4)]
    assert list(drop.get_batch_indices(exact)) == [[0, 1], [2, 3]]
    # an over-long sentence is never dropped, wherever it is
    lengths = [5, 50, 5, 5]
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    assert list(keep.get_batch_indices(instances)) == [[0], [1], [2, 3]]
    assert list(drop.get_batch_indices(instances)) == [[0], [1]]
    assert list(drop.get_batch_indices([make_instance(0, 50)])) == [[0]]
    assert list(keep.get_batch_indices([])) == [] and keep.get_num_batches([]) == 0


def test_sorting_keys():
    # default: the first TextField, not the longer one after it
    lengths = [4, 4, 4, 4]
    instances = [make_instance(i, n, extra_text=100) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=8, shuffle=False, sort_by_length=False)
    assert list(sampler.get_batch_indices(instances)) == [[0, 1], [2, 3]]
    assert sampler.sorting_keys == ["tokens"]
    # explicit keys: the size is the largest of them
    by_pieces = TokenBudgetBatchSampler(max_tokens=300, sorting_keys=["tokens", "pieces"], shuffle=False)
    assert len(list(by_pieces.get_batch_indices(instances))) == 2
    with pytest.raises(ConfigurationError):
        list(TokenBudgetBatchSampler(sorting_keys=["nope"]).get_batch_indices(instances))
    # no TextField: the longest field
    no_text = [Instance({"a": LabelField("x"), "b": MetadataField(list(range(5)))}) for _ in range(3)]
    fallback = TokenBudgetBatchSampler(max_tokens=10, shuffle=False)
    assert list(fallback.get_batch_indices(no_text)) == [[0, 1], [2]]
    assert fallback.sorting_keys == ["b"]


def test_bad_parameters():
    for kwargs in ({"max_tokens": 0}, {"count": "sentences"}, {"padding_noise": -1.0}):
        with pytest.raises(ConfigurationError):
            TokenBudgetBatchSampler(**kwargs)


def test_num_batches_is_exact_for_the_next_epoch():
    lengths = random_lengths(6, num=300)
    instances = [make_instance(i, n) for i, n in enumerate(lengths)]
    sampler = TokenBudgetBatchSampler(max_tokens=200, padding_noise=0.5)
    for _ in range(5):
        expected = sampler.get_num_batches(instances)
        assert sampler.get_num_batches(instances) == expected  # asking twice changes nothing
        assert len(list(sampler.get_batch_indices(list(instances)))) == expected  # a new, equal list
    assert sampler.get_batch_size() is None


# ----------------------------------------------------------------------------------- with a DataLoader
class LengthsReader(DatasetReader):
    """Reads 'n1 n2 n3 ...' (a path-like string of lengths) into one instance per length."""

    def _read(self, file_path):
        for index, length in enumerate(file_path.split()):
            yield make_instance(index, int(length))


def small_vocab():
    vocab = Vocabulary()
    vocab.add_token_to_namespace("x", "labels")
    vocab.add_token_to_namespace("T", "labels")
    return vocab


def loader_epoch(loader):
    return [batch["id"] for batch in loader]


def test_multiprocess_data_loader_from_params():
    lengths = random_lengths(7, num=120)
    data_path = " ".join(map(str, lengths))
    params = Params({"batch_sampler": {"type": "token_budget", "max_tokens": 150}})
    loader = MultiProcessDataLoader.from_params(params, reader=LengthsReader(), data_path=data_path)
    assert isinstance(loader.batch_sampler, TokenBudgetBatchSampler)
    loader.index_with(small_vocab())
    for _ in range(3):
        num_batches = len(loader)
        ids = loader_epoch(loader)
        assert len(ids) == num_batches  # len(loader) is exact although batching is random
        assert sorted(i for batch in ids for i in batch) == list(range(len(lengths)))
        for batch in ids:
            assert len(batch) == 1 or words(batch, lengths) <= 150
    assert isinstance(BatchSampler.from_params(Params({"type": "token_budget"})), TokenBudgetBatchSampler)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_multiprocess_data_loader_lazy(num_workers):
    lengths = random_lengths(8, num=100)
    loader = MultiProcessDataLoader(
        LengthsReader(),
        " ".join(map(str, lengths)),
        batch_sampler=TokenBudgetBatchSampler(max_tokens=100),
        max_instances_in_memory=30,
        num_workers=num_workers,
    )
    loader.index_with(small_vocab())
    ids = loader_epoch(loader)
    assert sorted(i for batch in ids for i in batch) == list(range(len(lengths)))
    for batch in ids:
        assert len(batch) == 1 or words(batch, lengths) <= 100
        # chunks of 30 instances are batched separately
        assert len({i // 30 for i in batch}) == 1
    with pytest.raises(TypeError):
        len(loader)


def distributed_loader_ids(rank, world_size, lengths):
    loader = MultiProcessDataLoader(
        LengthsReader(), " ".join(map(str, lengths)), batch_sampler=TokenBudgetBatchSampler(max_tokens=100)
    )
    loader.index_with(small_vocab())
    return loader_epoch(loader)


def test_distributed_workers_batch_their_own_shard():
    # Nothing in the sampler knows about ranks: DatasetReader.read gives worker r instances r, r + 2, ...
    lengths = random_lengths(9, num=81)
    per_rank = run_distributed(distributed_loader_ids, 2, lengths)
    for rank, batches in enumerate(per_rank):
        ids = sorted(i for batch in batches for i in batch)
        assert ids == list(range(rank, len(lengths), 2))
        for batch in batches:
            assert len(batch) == 1 or words(batch, lengths) <= 100


# ------------------------------------------------------------------------- the padded sub-token budget
class PiecesReader(DatasetReader):
    """Sentences of words with many or few word pieces, indexed by the tiny BERT's mismatched indexer."""

    def __init__(self, sentences, **kwargs):
        super().__init__(**kwargs)
        self.sentences = sentences
        self.indexers = {"tokens": PretrainedTransformerMismatchedIndexer(str(TINY_BERT))}

    def _read(self, file_path):
        for index, words in enumerate(self.sentences):
            tokens = TextField([Token(word) for word in words], self.indexers)
            yield Instance({"id": MetadataField(index), "tokens": tokens})


def piece_sentences(seed, num=150):
    """Mostly short sentences of short words; some short ones of long, rare strings (URL-like: many pieces)."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(num):
        if rng.random() < 0.1:
            words = ["".join(rng.choice("qxzjkv0123") for _ in range(rng.randint(20, 60)))
                     for _ in range(rng.randint(1, 4))]
        else:
            words = [rng.choice(["the", "ring", "was", "held", "by", "frodo", "."]) for _ in range(rng.randint(1, 30))]
        sentences.append(words)
    return sentences


def oracle_pieces(words):
    """Word pieces with [CLS] and [SEP], straight from the tokenizer (not through the sampler)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(TINY_BERT))
    return 2 + sum(len(tokenizer.tokenize(word)) for word in words)


@pytest.mark.parametrize("shuffle", [True, False])
def test_subtoken_budget_bounds_the_padded_plm_tensor(shuffle):
    sentences = piece_sentences(1) + [["w"] * 300]  # one sentence over both budgets
    pieces = [oracle_pieces(words) for words in sentences]
    assert max(p / len(s) for p, s in zip(pieces, sentences)) > 10  # the case the budget is for
    loader = MultiProcessDataLoader(PiecesReader(sentences), "unused",
                                    batch_sampler=TokenBudgetBatchSampler(max_tokens=200, max_subtokens=400,
                                                                          shuffle=shuffle))
    loader.index_with(Vocabulary())
    for _ in range(2):
        num_batches = len(loader)
        batches = list(loader)
        assert len(batches) == num_batches
        ids = [list(batch["id"]) for batch in batches]
        assert sorted(i for batch in ids for i in batch) == list(range(len(sentences)))
        for batch, indices in zip(batches, ids):
            assert batch["tokens"]["tokens"]["token_ids"].size(1) == max(pieces[i] for i in indices)
            if len(indices) > 1:
                assert batch["tokens"]["tokens"]["token_ids"].numel() <= 400  # (sentences, pieces): the PLM input
                assert sum(len(sentences[i]) for i in indices) <= 200  # and the word budget still holds
        assert [len(sentences) - 1] in ids  # over budget: alone


def test_without_subtoken_budget_short_sentences_pad_to_a_long_one():
    """The failure the budget fixes: sorted by words, a 2-word sentence of 100 pieces pads 60 short ones."""
    sentences = [["the", "ring"]] * 60 + [["qxzjkv0123" * 10, "x"]]
    instances = list(PiecesReader(sentences).read("unused"))
    for instance in instances:
        instance.index_fields(Vocabulary())
    pieces = [oracle_pieces(words) for words in sentences]
    for budget, worst in ((None, 61 * max(pieces)), (256, 256)):
        sampler = TokenBudgetBatchSampler(max_tokens=1024, max_subtokens=budget, shuffle=False)
        batches = list(sampler.get_batch_indices(instances))
        padded = max(len(batch) * max(pieces[i] for i in batch) for batch in batches)
        assert padded == worst if budget is None else padded <= worst


def test_unindexed_fields_count_words():
    instances = [make_instance(i, n) for i, n in enumerate(random_lengths(9))]  # never indexed
    sampler = TokenBudgetBatchSampler(max_tokens=10_000, max_subtokens=300, shuffle=False)
    for batch in sampler.get_batch_indices(instances):
        lengths = [len(instances[i]["tokens"]) for i in batch]
        assert len(batch) * max(lengths) <= 300
    with pytest.raises(ConfigurationError):
        TokenBudgetBatchSampler(max_subtokens=0)
