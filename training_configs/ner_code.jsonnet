// Validation stage for NER (paper §3.3; Table 6: dropout 0.2, lr 3e-3): a CRF tagger that reads only the codes
// of `allennlp hash-corpus`. Defaults train on fixtures/data/codes in seconds. After a hashing run:
//   allennlp hash-corpus runs/ner/model.tar.gz TRAIN -o runs/ner_codes/train.jsonl   (and DEV)
//   TRAIN_DATA=runs/ner_codes/train.jsonl DEV_DATA=runs/ner_codes/dev.jsonl \
//   allennlp train training_configs/ner_code.jsonnet -s runs/ner_code
// Variables: docs/configs.md (each with its default): code_model.libsonnet's. K: the codes file's (num_bits).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';
local code_model = import 'code_model.libsonnet';

code_model(
  model=common.tagger_options + { type: "hash_crf_tagger", label_encoding: "BIOUL", dropout: env.num("DROPOUT") },
  validation_metric="+f1-measure-overall",
)
