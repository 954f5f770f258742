// The validation-stage model shared by {pos,ner,parse}_code.jsonnet (paper §3.3, Eq. 9, Table 6 second block):
// codes corpus (`allennlp hash-corpus` output, reader `binary_codes`) → `binary_code` embedding (d = K · d/K) →
// one-layer transformer → the same task head as the hashing stage, with no hash loss and no access to words.
// Variables (env.libsonnet): TRAIN_DATA DEV_DATA K CODE_DIM (d, rounded up to a multiple of K and of the
// heads; default 128) CODE_HEADS (4) CODE_FF (feed-forward size, default 2·d) CODE_ENCODER ("transformer", the
// paper's; or "window": beyond the paper, CODE_LAYERS convolutions over CODE_WINDOW words on each side, output
// size CODE_FF, `window_feedforward`, much cheaper at inference) CODE_WINDOW (1) CODE_LAYERS (1) DROPOUT LR EPOCHS (default 20)
// MAX_TOKENS WARMUP WEIGHT_DECAY GRAD_NORM MAX_INSTANCES SKIP_INVALID CUDA_DEVICE WORKERS SEED; taggers also
// TRAINING_METRICS (common.libsonnet).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';

local K = env.num("K", 24);
local heads = env.num("CODE_HEADS", 4);
local gcd(a, b) = if b == 0 then a else gcd(b, a % b);
local unit = K * heads / gcd(K, heads);  // d must split into K bit slices and into the attention heads
local d = unit * std.ceil(env.num("CODE_DIM", 128) / unit);
local encoder = env.str("CODE_ENCODER", "transformer");

function(train, dev, model, lr, dropout, validation_metric)
  common.readers({ type: "binary_codes", num_bits: K, skip_invalid: env.bool("SKIP_INVALID", false) }) + {
    train_data_path: env.str("TRAIN_DATA", train),
    validation_data_path: env.str("DEV_DATA", dev),
    model: model + {
      text_field_embedder: { token_embedders: { codes: { type: "binary_code", num_bits: K, embedding_dim: d } } },
      encoder: if encoder == "transformer" then {
        type: "pytorch_transformer",
        num_layers: 1,
        num_attention_heads: heads,
        feedforward_hidden_dim: env.num("CODE_FF", 2 * d),
        positional_encoding: "sinusoidal",
        dropout_prob: env.num("DROPOUT", dropout),
      } else if encoder == "window" then {
        type: "window_feedforward",
        input_dim: d,
        hidden_dim: env.num("CODE_FF", 2 * d),
        window: env.num("CODE_WINDOW", 1),
        num_layers: env.num("CODE_LAYERS", 1),
        dropout: env.num("DROPOUT", dropout),
      } else error "CODE_ENCODER must be 'transformer' or 'window', got '" + encoder + "'",
      beta: 0,
      two_views: false,
    },
  } + common.training(lr, validation_metric, [".*"], plm_input=false) + {
    trainer+: { num_epochs: env.num("EPOCHS", 20) },
  }
