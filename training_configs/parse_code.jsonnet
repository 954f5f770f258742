// Validation stage for constituency parsing (paper §3.3; Table 6: dropout 0.3, lr 1e-3): the biaffine span
// parser with tree CRF and CKY, reading only the codes of `allennlp hash-corpus` (run on a parse_hash model;
// each line carries the gold tree). Defaults train on fixtures/data/codes in seconds.
// Variables: docs/configs.md (each with its default); own: BOUNDARY SPAN_MLP_DIM LABEL_MLP_DIM
// MLP_DROPOUT; the rest code_model.libsonnet's. K: the codes file's (num_bits).
local env = import 'env.libsonnet';
local code_model = import 'code_model.libsonnet';

code_model(
  model={
    type: "hash_span_parser",
    // The hashing-stage parser's fenceposts (§3.3: "the same task-specific layers"); AllenNLP's
    // pytorch_transformer reports itself not bidirectional, which would otherwise pick "left".
    boundary: env.str("BOUNDARY"),
    dropout: env.num("DROPOUT"),
    span_mlp_dim: env.num("SPAN_MLP_DIM"),
    label_mlp_dim: env.num("LABEL_MLP_DIM"),
    mlp_dropout: env.num("MLP_DROPOUT"),
  },
  validation_metric="+evalb_f1",
)
