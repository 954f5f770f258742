// What every hashing-stage config shares: the PLM sub-token indexer/embedder, token-budget batches, AdamW with
// linear warm-up over a fraction of the steps (paper §4.1), optional DDP workers, seeds.
// Variables: docs/configs.md (each with its default): the shared ones, read through env.libsonnet.
local env = import 'env.libsonnet';

{
  plm:: env.str("PLM"),

  // The PLM's window in word pieces (special tokens included): MAX_LENGTH, or `none` for the tokenizer's own
  // model_max_length; longer sentences are read in overlapping windows (data/token_indexers/plm_words.py).
  max_length:: env.num("MAX_LENGTH"),
  // Word-piece indexer: each sentence tokenized once, as running text, with the PLM's own template; one vector per
  // word comes from the matching embedder below (its pieces averaged, at layer PLM_LAYER).
  indexer(plm):: { tokens: { type: "plm_words", model_name: plm, max_length: $.max_length } },
  // FREEZE_PLM=true (budget runs, benchmarks/reproduce.py): the PLM frozen and its word vectors cached per sentence,
  // dropout PLM_DROPOUT on them; only the hash layer and the task head train. The paper fine-tunes the PLM.
  // PLM_LAYER: `last` (default), a layer number (0 = embeddings, negative from the top) or `mix` (scalar mix).
  // MASK_PROB (fine-tuned PLM, training only): each word piece → the mask token with this probability (Wang &
  // Utiyama 2024, beyond the 24-bit paper).
  embedder(plm):: {
    token_embedders: {
      tokens: if env.bool("FREEZE_PLM") && env.num("MASK_PROB") > 0 then
        error "MASK_PROB masks the pieces a fine-tuned PLM reads: not with FREEZE_PLM (its word vectors are cached)"
      else if env.bool("FREEZE_PLM") then
        { type: "frozen_plm_words", model_name: plm, max_length: $.max_length, layer: env.str("PLM_LAYER"), dropout: env.num("PLM_DROPOUT") }
      else
        { type: "plm_words", model_name: plm, max_length: $.max_length, layer: env.str("PLM_LAYER"), train_parameters: true,
          mask_probability: env.num("MASK_PROB") },
    },
  },
  // The embedder's own fresh parameters (the empty-word vector, PLM_LAYER=mix's weights): in the HEAD_LR group.
  embedder_head:: "^text_field_embedder\\.token_embedder_tokens\\.(empty_word$|_scalar_mix\\.)",
  reader_options:: {
    token_policy: env.str("TOKEN_POLICY"),
    skip_invalid: env.bool("SKIP_INVALID"),
  },
  // The training reader, capped at MAX_INSTANCES sentences (budget runs), and one for validation, `allennlp
  // evaluate` and `hash-corpus`, which MAX_INSTANCES never caps: scores are on the whole dev file unless
  // DEV_MAX_INSTANCES asks for its first sentences only (benchmarks/reproduce.py's reduced grid says so).
  readers(reader):: {
    dataset_reader: reader + { [if env.has("MAX_INSTANCES") then "max_instances"]: env.num("MAX_INSTANCES") },
    validation_dataset_reader: reader + {
      [if env.has("DEV_MAX_INSTANCES") then "max_instances"]: env.num("DEV_MAX_INSTANCES"),
    },
  },
  hash_encoder:: {
    type: "hash_transformer",
    num_bits: env.num("K"),
    head_dim: env.num("HEAD_DIM"),
    dropout: env.num("DROPOUT"),
    causal: env.bool("CAUSAL"),
    // RESIDUAL=false: no residual around the attention, the literal Eq. 8 (study option; the default keeps it).
    residual: env.bool("RESIDUAL"),
    // QK_ONLY=true: only the query and key projections, for the codes; the task head reads the PLM's vectors
    // (the authors' later paper, Wang & Utiyama 2024).
    qk_only: env.bool("QK_ONLY"),
  },
  // Taggers (hash_crf_tagger, both stages): TRAINING_METRICS=false skips Viterbi decoding in training forwards, so
  // no training accuracy / span F1 is reported; dev metrics are exact either way (eval mode always decodes).
  tagger_options:: { training_metrics: env.bool("TRAINING_METRICS") },
  // Beyond the paper (hashing-stage taggers and parsers): CODE_HEAD > 0 adds a code-reading head of that weight
  // (bitcode_allennlp/model/code_head.py): an MLP (CODE_HEAD_DIM hidden units) on sign(s) with a straight-through
  // gradient, trained on the gold per-word labels (the parser's: the trees' POS tags, read with the reader's
  // tag_field).
  has_code_head:: env.num("CODE_HEAD") > 0,
  code_head_options:: if $.has_code_head then {
    code_head: {
      type: "mlp",
      weight: env.num("CODE_HEAD"),
      hidden_dim: env.num("CODE_HEAD_DIM"),
      // CODE_HEAD_REACH=hash_layer: the head's gradient stops at the hash layer's inputs (default plm).
      reach: env.str("CODE_HEAD_REACH"),
    },
  } else {},
  hash_options:: {
    beta: env.num("BETA"),
    // Algorithm 1's fine_tuning_step always sums the task losses of two dropout views, so the β = 0 baseline
    // differs from the hashing model by the hash loss alone (the models' own default, two_views: true);
    // TWO_VIEWS=false trains a one-view baseline.
    two_views: env.bool("TWO_VIEWS"),
    // VIEWS: the two views as two passes (sequential), one pass over the batch stacked twice (batched), or one PLM
    // pass and two hash-layer passes (hash_layer, beyond the paper).
    views: env.str("VIEWS"),
    // HASH_LOSS_REACH=hash_layer: the hash loss's gradient stops at the hash layer's inputs (default plm).
    hash_loss_reach: env.str("HASH_LOSS_REACH"),
    hash_loss: {
      temperature: env.num("TAU"),
      similarity: env.str("SIMILARITY"),
      objective: env.str("OBJECTIVE"),
    },
  },
  // Batches of at most MAX_TOKENS words (paper §4.1: 1024); with a PLM also at most MAX_SUBTOKENS padded sub-tokens
  // (batch size × longest sentence in word pieces: what the PLM's memory follows), sorted by sub-tokens.
  batches(plm_input, shuffle):: {
    type: "token_budget",
    max_tokens: env.num("MAX_TOKENS"),
    [if plm_input then "max_subtokens"]: env.num("MAX_SUBTOKENS"),
    [if !shuffle then "shuffle"]: false,
  },
  // Everything outside dataset_reader / model / data paths; plm_input false for the validation stage (codes).
  training(validation_metric, head_params, plm_input=true):: {
    data_loader: { batch_sampler: $.batches(plm_input, true) },
    validation_data_loader: { batch_sampler: $.batches(plm_input, false) },
    trainer: {
      optimizer: {
        type: "adamw",
        lr: env.num("LR"),
        weight_decay: env.num("WEIGHT_DECAY"),
        // HEAD_LR: a separate learning rate for the freshly initialised layers (all but the PLM).
        [if env.has("HEAD_LR") then "parameter_groups"]: [[head_params, { lr: env.num("HEAD_LR") }]],
      },
      learning_rate_scheduler: { type: "linear_with_warmup_fraction", warmup_fraction: env.num("WARMUP") },
      num_epochs: env.num("EPOCHS"),
      grad_norm: env.num("GRAD_NORM"),
      validation_metric: validation_metric,
      cuda_device: env.num("CUDA_DEVICE"),
      callbacks: [{ type: "console_logger" }, { type: "parameter_count" }, { type: "throughput" }],
      // CHECKPOINT_EVERY: also save a checkpoint every N batches, so `allennlp train --recover` resumes mid-epoch.
      [if env.has("CHECKPOINT_EVERY") then "checkpointer"]: { save_every_num_batches: env.num("CHECKPOINT_EVERY") },
    },
    [if env.num("WORKERS") > 1 then "distributed"]: {
      cuda_devices: std.makeArray(env.num("WORKERS"), function(i) if env.num("CUDA_DEVICE") >= 0 then i else -1),
      ddp_accelerator: { type: "torch", find_unused_parameters: true },
    },
    // SEED sets AllenNLP's three seeds (unset: AllenNLP's own three defaults).
    random_seed: env.get("SEED").random_seed,
    numpy_seed: env.get("SEED").numpy_seed,
    pytorch_seed: env.get("SEED").pytorch_seed,
  },
}
