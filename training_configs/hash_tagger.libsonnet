// The hashing-stage CRF tagger shared by pos_hash.jsonnet and ner_hash.jsonnet (paper §3–4, Table 6).
// Every value below can be overridden by an environment variable of the same name (see env.libsonnet).
local env = import 'env.libsonnet';

function(reader, train, dev, beta, lr, dropout, label_encoding, validation_metric) {
  local plm = env.str("PLM", env.root + "/fixtures/transformers/tiny-bert"),
  local indexer = { type: "pretrained_transformer_mismatched", model_name: plm, max_length: env.num("MAX_LENGTH", 512) },

  dataset_reader: reader {
    token_indexers: { tokens: indexer },
    token_policy: env.str("TOKEN_POLICY", "strict"),
    skip_invalid: env.bool("SKIP_INVALID", false),
    [if env.has("MAX_INSTANCES") then "max_instances"]: env.num("MAX_INSTANCES", null),
  },
  train_data_path: env.str("TRAIN_DATA", train),
  validation_data_path: env.str("DEV_DATA", dev),
  model: {
    type: "hash_crf_tagger",
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: "pretrained_transformer_mismatched",
          model_name: plm,
          max_length: env.num("MAX_LENGTH", 512),
          train_parameters: true,
        },
      },
    },
    encoder: {
      type: "hash_transformer",
      num_bits: env.num("K", 24),
      head_dim: env.num("HEAD_DIM", 64),
      dropout: env.num("DROPOUT", dropout),
      causal: env.bool("CAUSAL", false),
    },
    beta: env.num("BETA", beta),
    two_views: env.bool("TWO_VIEWS", env.num("BETA", beta) > 0),
    hash_loss: {
      temperature: env.num("TAU", 0.1),
      similarity: env.str("SIMILARITY", "cos_sign"),
      objective: env.str("OBJECTIVE", "hash"),
    },
    label_encoding: label_encoding,
    dropout: env.num("DROPOUT", dropout),
  },
  data_loader: {
    batch_sampler: { type: "token_budget", max_tokens: env.num("MAX_TOKENS", 1024) },
  },
  validation_data_loader: {
    batch_sampler: { type: "token_budget", max_tokens: env.num("MAX_TOKENS", 1024), shuffle: false },
  },
  trainer: {
    optimizer: {
      type: "adamw",
      lr: env.num("LR", lr),
      weight_decay: env.num("WEIGHT_DECAY", 0.01),
      // HEAD_LR: a separate learning rate for the freshly initialised layers (hash layer, projection, CRF).
      [if env.has("HEAD_LR") then "parameter_groups"]: [[["^encoder\\.", "^tag_projection\\.", "^crf\\."], { lr: env.num("HEAD_LR", lr) }]],
    },
    learning_rate_scheduler: { type: "linear_with_warmup_fraction", warmup_fraction: env.num("WARMUP", 0.06) },
    num_epochs: env.num("EPOCHS", 3),
    grad_norm: env.num("GRAD_NORM", 1.0),
    validation_metric: validation_metric,
    cuda_device: env.num("CUDA_DEVICE", -1),
    callbacks: [{ type: "console_logger" }],
  },
  [if env.num("WORKERS", 1) > 1 then "distributed"]: {
    cuda_devices: std.makeArray(env.num("WORKERS", 1), function(i) if env.num("CUDA_DEVICE", -1) >= 0 then i else -1),
    ddp_accelerator: { type: "torch", find_unused_parameters: true },
  },
  random_seed: env.num("SEED", 13370),
  numpy_seed: env.num("SEED", 1337),
  pytorch_seed: env.num("SEED", 133),
}
