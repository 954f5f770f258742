// The hashing-stage CRF tagger shared by pos_hash.jsonnet and ner_hash.jsonnet (paper §3–4, Table 6).
// Variables: docs/configs.md (each with its default); own: TRAIN_DATA DEV_DATA TASK_LOSS CODE_HEAD
// CODE_HEAD_DIM CODE_HEAD_FLIP; the rest common.libsonnet's.
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';

function(reader, train, dev, beta, lr, dropout, label_encoding, validation_metric)
  local plm = common.plm();
  common.readers(reader + common.reader_options + { token_indexers: common.indexer(plm) }) + {
    train_data_path: env.str("TRAIN_DATA", train),
    validation_data_path: env.str("DEV_DATA", dev),
    model: common.hash_options(beta) + common.tagger_options + {
      type: "hash_crf_tagger",
      text_field_embedder: common.embedder(plm),
      encoder: common.hash_encoder(dropout),
      label_encoding: label_encoding,
      dropout: env.num("DROPOUT", dropout),
      task_loss: env.str("TASK_LOSS", "mean"),
      // Beyond the paper: CODE_HEAD > 0 adds a code-reading head on sign(s) (straight-through), weight CODE_HEAD.
      code_head_weight: env.num("CODE_HEAD", 0),
      code_head_dim: env.num("CODE_HEAD_DIM", 256),
      // Beyond the paper: the code-reading head reads the codes with each bit flipped with this probability.
      code_head_bit_flip: env.num("CODE_HEAD_FLIP", 0),
    },
  } + common.training(lr, validation_metric, [common.embedder_head, "^encoder\\.", "^tag_projection\\.", "^crf\\.", "^code_head\\."])
