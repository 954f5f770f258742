// Hashing stage for the toy chunking task (tests/tasks/chunking): the hashing-stage CRF tagger of
// training_configs/hash_tagger.libsonnet on CoNLL-2000 columns (reader `conll2000_chunks`), chunk tags recoded
// to BIOUL. Variables: hash_tagger.libsonnet's (TRAIN_DATA, DEV_DATA given by the experiment); no new one.
local tagger = import '../../../training_configs/hash_tagger.libsonnet';

tagger(
  reader={ type: "conll2000_chunks", coding_scheme: "BIOUL" },
  label_encoding="BIOUL",
  validation_metric="+f1-measure-overall",
)
