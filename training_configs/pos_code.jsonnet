// Validation stage for POS tagging (paper §3.3; Table 6: dropout 0.1, lr 5e-4): a CRF tagger that reads only the
// codes of `allennlp hash-corpus`. Defaults train on fixtures/data/codes in seconds; real data as in
// ner_code.jsonnet. Variables: docs/configs.md (each with its default): code_model.libsonnet's.
// K: the codes file's (num_bits).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';
local code_model = import 'code_model.libsonnet';

code_model(
  model=common.tagger_options + { type: "hash_crf_tagger", label_encoding: null, dropout: env.num("DROPOUT") },
  validation_metric="+accuracy",
)
