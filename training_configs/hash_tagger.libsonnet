// The hashing-stage CRF tagger shared by pos_hash.jsonnet and ner_hash.jsonnet (paper §3–4, Table 6).
// Variables: docs/configs.md (each with its default); own: TRAIN_DATA DEV_DATA TASK_LOSS; the rest
// common.libsonnet's (the code-reading head's CODE_HEAD CODE_HEAD_DIM among them).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';

function(reader, label_encoding, validation_metric)
  local plm = common.plm;
  common.readers(reader + common.reader_options + { token_indexers: common.indexer(plm) }) + {
    train_data_path: env.str("TRAIN_DATA"),
    validation_data_path: env.str("DEV_DATA"),
    model: common.hash_options + common.tagger_options + common.code_head_options + {
      type: "hash_crf_tagger",
      text_field_embedder: common.embedder(plm),
      encoder: common.hash_encoder,
      label_encoding: label_encoding,
      dropout: env.num("DROPOUT"),
      task_loss: env.str("TASK_LOSS"),
    },
  } + common.training(validation_metric, [common.embedder_head, "^encoder\\.", "^tag_projection\\.", "^crf\\.", "^code_head\\."])
