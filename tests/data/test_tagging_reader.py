"""What all tagging readers share: registration, FromParams, instances, sharding, max_instances, errors."""
import logging
import pickle

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.dataset_readers import DatasetReader
from allennlp.data.dataset_readers.dataset_reader import WorkerInfo
from allennlp.data.tokenizers import Token

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers import (
    ConllColumnsDatasetReader,
    ConlluPosDatasetReader,
    OntonotesHashDatasetReader,
    PtbHashDatasetReader,
)
from tests.data.helpers import ROOT, read, write

SENTENCES = "".join(f"w{i}\t{'B-PER' if i % 3 == 0 else 'O'}\n\n" for i in range(10))


def test_registered_names():
    assert DatasetReader.by_name("ptb_hash") is PtbHashDatasetReader
    assert DatasetReader.by_name("ontonotes_hash") is OntonotesHashDatasetReader
    assert DatasetReader.by_name("conll_columns") is ConllColumnsDatasetReader
    assert DatasetReader.by_name("conllu_pos") is ConlluPosDatasetReader


@pytest.mark.parametrize("params", [
    {"type": "ptb_hash", "token_policy": "repair", "skip_invalid": True, "max_instances": 5},
    {"type": "ontonotes_hash", "domain_identifier": "nw", "coding_scheme": "BIO", "token_policy": "repair"},
    {"type": "conll_columns", "token_column": 0, "tag_column": 3, "delimiter": " ", "input_scheme": "IOB1",
     "coding_scheme": "BIO", "repair_iob": True, "token_policy": "repair", "skip_invalid": True},
    {"type": "conllu_pos", "tag": "upos", "token_policy": "strict"},
])
def test_every_option_is_configurable(params):
    expected = {key: value for key, value in params.items() if key not in ("type", "max_instances")}
    reader = DatasetReader.from_params(Params(dict(params)))
    assert {key: getattr(reader, f"_{key}") for key in expected} == expected
    assert reader.manual_distributed_sharding and reader.manual_multiprocess_sharding


def test_from_params_with_the_mismatched_transformer_indexer(tmp_path):
    model = ROOT / "fixtures" / "transformers" / "tiny-bert"
    if not (model / "tokenizer_config.json").exists():
        pytest.skip("tiny-bert fixture not built")
    reader = DatasetReader.from_params(Params({
        "type": "conll_columns",
        "token_indexers": {"tokens": {"type": "pretrained_transformer_mismatched", "model_name": str(model)}},
        "token_policy": "repair",
        "max_instances": 2,
    }))
    path = write(tmp_path, "a.conll", "Frodo\tB-PER\nleft\tO\n\nSam\tB-PER\n\nx\tO\n")
    instances = list(reader.read(path))
    assert len(instances) == 2
    vocab = Vocabulary.from_instances(instances)
    instances[0].index_fields(vocab)
    tensors = instances[0].as_tensor_dict()
    assert tensors["tokens"]["tokens"]["offsets"].shape == (2, 2)
    assert tensors["tags"].tolist() == [vocab.get_token_index(t, "labels") for t in ["U-PER", "O"]]


def test_text_to_instance_without_gold_for_predictors():
    reader = ConllColumnsDatasetReader()
    instance = reader.text_to_instance(["Frodo", Token("left")])
    assert set(instance.fields) == {"tokens", "metadata"}
    assert instance["metadata"].metadata == {"words": ["Frodo", "left"], "source": None}
    reader.apply_token_indexers(instance)
    assert instance["tokens"].token_indexers is reader._token_indexers
    with_tags = PtbHashDatasetReader().text_to_instance(["a", "b"], ["DT", "NN"], source="f.mrg:3")
    assert with_tags["tags"].labels == ["DT", "NN"] and with_tags["tags"]._label_namespace == "labels"
    assert with_tags["metadata"].metadata["source"] == "f.mrg:3"
    with pytest.raises(ConfigurationError):
        reader.text_to_instance(["a"], ["O", "O"])


def test_sharding_over_workers_with_errors_owned_by_one_worker(tmp_path, caplog):
    path = write(tmp_path, "a.conll", SENTENCES.replace("w4\tO", "w4\tI-PER"))  # sentence 4 is bad
    everything = [words[0] for words, _, _ in read(ConllColumnsDatasetReader(skip_invalid=True), path)]
    assert everything == [f"w{i}" for i in range(10) if i != 4]
    shards = []
    for worker in range(3):
        reader = ConllColumnsDatasetReader(skip_invalid=True)
        reader._set_worker_info(WorkerInfo(num_workers=3, id=worker))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            shards.append([instance["metadata"].metadata["words"][0] for instance in reader.read(path)])
        assert ("Skipped 1 invalid" in caplog.text) == (worker == 4 % 3)
    assert shards == [["w0", "w3", "w6", "w9"], ["w1", "w7"], ["w2", "w5", "w8"]]


def test_max_instances_counts_instances_not_skipped_sentences(tmp_path):
    path = write(tmp_path, "a.conll", "a\tI-PER\n\nb\tI-PER\n\n" + SENTENCES)
    reader = ConllColumnsDatasetReader(skip_invalid=True, max_instances=3)
    assert [words for words, _, _ in read(reader, path)] == [["w0"], ["w1"], ["w2"]]


def test_multi_process_loading_reads_each_sentence_once(tmp_path):
    path = write(tmp_path, "a.conll", SENTENCES)
    loader = MultiProcessDataLoader(ConllColumnsDatasetReader(), path, batch_size=4, num_workers=2)
    words = sorted(instance["metadata"].metadata["words"][0] for instance in loader.iter_instances())
    assert words == sorted(f"w{i}" for i in range(10))


def test_data_format_error():
    error = DataFormatError("data/a.conll", 17, "CoNLL-2012 row has 8 columns, expected at least 12")
    assert str(error) == "data/a.conll, line 17: CoNLL-2012 row has 8 columns, expected at least 12"
    assert error.location == "data/a.conll:17"
    assert isinstance(error, ConfigurationError)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.path, copy.line, copy.message, str(copy)) == (
        DataFormatError, error.path, 17, error.message, str(error))
    whole = DataFormatError("data/", None, "no files ending in 'gold_conll' under this directory")
    assert str(whole) == "data/: no files ending in 'gold_conll' under this directory"
    assert whole.location == "data/"
