// Hashing stage for constituency parsing (bidirectional PLM; paper Table 6: beta 0.001, tau 0.1, dropout 0.5,
// lr 5e-5; K = 24). Reads PTB bracketed trees (ptb_spans); defaults train on fixtures/ in seconds. Real data:
//   PLM=$(python -m bitcode_allennlp.plm minilm) TOKEN_POLICY=repair \
//   TRAIN_DATA=../shared/data/const/craft/craft-train.tree DEV_DATA=../shared/data/const/craft/craft-dev.tree \
//   allennlp train training_configs/parse_hash.jsonnet -s runs/parse
// Variables: docs/configs.md (each with its default): hash_parser.libsonnet's.
local parser = import 'hash_parser.libsonnet';

parser()
