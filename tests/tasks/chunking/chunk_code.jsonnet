// Validation stage for the toy chunking task: the codes-only CRF tagger of training_configs/code_model.libsonnet
// (as ner_code.jsonnet). Variables: code_model.libsonnet's; K: the codes file's (num_bits).
local common = import '../../../training_configs/common.libsonnet';
local env = import '../../../training_configs/env.libsonnet';
local code_model = import '../../../training_configs/code_model.libsonnet';

code_model(
  model=common.tagger_options + { type: "hash_crf_tagger", label_encoding: "BIOUL", dropout: env.num("DROPOUT") },
  validation_metric="+f1-measure-overall",
)
