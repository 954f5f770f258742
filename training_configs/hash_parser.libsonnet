// The hashing-stage span parser shared by parse_hash.jsonnet and parse_hash_incremental.jsonnet
// (paper §3.2, Table 6: beta 0.001, tau 0.1, dropout 0.5, lr 5e-5: their declared defaults).
// Variables: docs/configs.md (each with its default); own: TRAIN_DATA DEV_DATA SPAN_MLP_DIM
// LABEL_MLP_DIM MLP_DROPOUT CODE_SPAN_HEAD CODE_SPAN_HEAD_DIM; the rest common.libsonnet's (the code-reading
// head's CODE_HEAD CODE_HEAD_DIM among them).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';

function()
  local plm = common.plm;
  // With a code-reading head the reader also gives each tree's part-of-speech tags (`tags`), the head's labels.
  local reader = { type: "ptb_spans", token_indexers: common.indexer(plm), [if common.has_code_head then "tag_field"]: true };
  common.readers(common.reader_options + reader) + {
    train_data_path: env.str("TRAIN_DATA"),
    validation_data_path: env.str("DEV_DATA"),
    model: common.hash_options + common.code_head_options + {
      type: "hash_span_parser",
      text_field_embedder: common.embedder(plm),
      encoder: common.hash_encoder,
      dropout: env.num("DROPOUT"),
      span_mlp_dim: env.num("SPAN_MLP_DIM"),
      label_mlp_dim: env.num("LABEL_MLP_DIM"),
      mlp_dropout: env.num("MLP_DROPOUT"),
      boundary: if env.bool("CAUSAL") then "left" else "split",
      // Beyond the paper: CODE_SPAN_HEAD > 0 adds a span code-reading head of that weight
      // (bitcode_allennlp/parsing/models/span_code_head.py): the parser's spans scored from the codes alone
      // (CODE_SPAN_HEAD_DIM hidden units), trained with the tree CRF loss on the gold spans.
      [if env.num("CODE_SPAN_HEAD") > 0 then "code_span_head"]: {
        weight: env.num("CODE_SPAN_HEAD"),
        hidden_dim: env.num("CODE_SPAN_HEAD_DIM"),
      },
    },
  } + common.training("+evalb_f1", [common.embedder_head, "^encoder\\.", "^span_", "^label_", "^bos$", "^eos$", "^code_head\\.", "^code_span_head\\."])
