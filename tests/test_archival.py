"""Self-contained archives (`bitcode_allennlp.host.archival`, patch ``self_contained_archives``): `model.tar.gz`
carries the PLM's config and tokenizer and loads from them; an archive without a PLM is unchanged. The check with an
archive moved to another machine is `tests/reliability/test_moved_archive.py`."""
import torch

from tests.conftest import CONFIGS, TINY_BERT


def archive_untrained(config, run, instances_from=None):
    """Writes a serialization directory for `config` (a `Params`) with an untrained model, archives it with
    AllenNLP's `archive_model` and returns the model and the archive path."""
    from allennlp.data import Vocabulary
    from allennlp.models import Model
    from allennlp.models.archival import archive_model

    run.mkdir()
    config.to_file(str(run / "config.json"))
    vocab = Vocabulary.from_instances(instances_from) if instances_from else Vocabulary(
        {"tokens": {"a": 1, "b": 1}, "labels": {"X": 1, "Y": 1}})
    vocab.save_to_files(str(run / "vocabulary"))
    model = Model.from_params(vocab=vocab, params=config.duplicate().pop("model"))
    torch.save(model.state_dict(), run / "best.th")
    return model.eval(), archive_model(str(run))


def test_archive_carries_the_plm_files_and_loads_from_them(tmp_path, monkeypatch):
    import shutil
    import tarfile

    import allennlp.commands.train
    from allennlp.common import Params
    from allennlp.data import DatasetReader
    from allennlp.models import archival

    import bitcode_allennlp.plugin  # noqa: F401

    assert allennlp.commands.train.archive_model is archival.archive_model  # `allennlp train` archives with it
    plm = tmp_path / "plm"
    shutil.copytree(TINY_BERT, plm)
    monkeypatch.setenv("PLM", str(plm))
    monkeypatch.setenv("MAX_INSTANCES", "4")
    config = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    reader = DatasetReader.from_params(config.duplicate().pop("dataset_reader"))
    model, path = archive_untrained(config, tmp_path / "run", list(reader.read(config["train_data_path"])))
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
    assert {"transformers/index.json", "transformers/plm/config.json", "transformers/plm/vocab.txt"} <= names
    assert not any(name.endswith(".safetensors") for name in names)
    shutil.rmtree(plm)

    archive = archival.load_archive(path)
    words = [["Frodo", "held", "the", "ring", "."], ["RT", "@BBC", ":", "hello"]]
    outputs = []
    for m, r in ((model, reader), (archive.model.eval(), archive.dataset_reader)):
        instances = [r.text_to_instance(w) for w in words]
        for instance in instances:
            r.apply_token_indexers(instance)
        outputs.append([(list(o["tags"]), list(o["code_hex"])) for o in m.forward_on_instances(instances)])
    assert outputs[0] == outputs[1]
    embedder = archive.model.text_field_embedder.token_embedder_tokens
    assert embedder.transformer_model.config.name_or_path.endswith("transformers/plm")  # the archive's copy


def test_archive_of_a_model_without_plm_is_unchanged(tmp_path):
    import tarfile

    from allennlp.common import Params
    from allennlp.models import archival

    config = Params({"dataset_reader": {"type": "sequence_tagging"}, "train_data_path": "unused",
                     "model": {"type": "simple_tagger", "encoder": {"type": "pass_through", "input_dim": 4},
                               "text_field_embedder": {"token_embedders": {"tokens": {"type": "embedding",
                                                                                      "embedding_dim": 4}}}}})
    model, path = archive_untrained(config, tmp_path / "run")
    with tarfile.open(path) as tar:
        names = tar.getnames()
    assert {"config.json", "weights.th", "vocabulary"} <= set(names)
    assert not any(name.startswith("transformers") for name in names)
    assert not (tmp_path / "run" / "transformers").exists()
    loaded = archival.load_archive(path).model.state_dict()
    assert all(torch.equal(value, loaded[key]) for key, value in model.state_dict().items())
