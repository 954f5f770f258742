// The validation-stage model shared by {pos,ner,parse}_code.jsonnet (paper §3.3, Eq. 9, Table 6 second block):
// codes corpus (`allennlp hash-corpus` output, reader `binary_codes`) → `binary_code` embedding (d = K · d/K) →
// one-layer transformer → the same task head as the hashing stage, with no hash loss and no access to words.
// Variables: docs/configs.md (each with its default); own: TRAIN_DATA DEV_DATA CODE_DIM CODE_HEADS
// CODE_FF CODE_ENCODER CODE_WINDOW CODE_LAYERS CODE_BIT_FLIP, and EPOCHS (its own default here); the rest
// common.libsonnet's. K is the TRAIN_DATA codes file's (Python reads it from there).
local common = import 'common.libsonnet';
local env = import 'env.libsonnet';

local K = env.num("K");
local heads = env.num("CODE_HEADS");
local gcd(a, b) = if b == 0 then a else gcd(b, a % b);
local unit = K * heads / gcd(K, heads);  // d must split into K bit slices and into the attention heads
local d = unit * std.ceil(env.num("CODE_DIM") / unit);
local encoder = env.str("CODE_ENCODER");
// CODE_FF unset: 2·d.
local ff(unset) = if env.has("CODE_FF") then env.num("CODE_FF") else unset;

function(model, validation_metric)
  common.readers({ type: "binary_codes", num_bits: K, skip_invalid: env.bool("SKIP_INVALID") }) + {
    train_data_path: env.str("TRAIN_DATA"),
    validation_data_path: env.str("DEV_DATA"),
    model: model + {
      text_field_embedder: { token_embedders: { codes: {
        type: "binary_code",
        num_bits: K,
        embedding_dim: d,
        // Beyond the paper, training-only noise on the codes (see binary_code_embedder.py); 0 = the paper's model.
        bit_flip: env.num("CODE_BIT_FLIP"),
      } } },
      encoder: if encoder == "transformer" then {
        type: "pytorch_transformer",
        num_layers: 1,
        num_attention_heads: heads,
        feedforward_hidden_dim: ff(2 * d),
        positional_encoding: "sinusoidal",
        dropout_prob: env.num("DROPOUT"),
      } else if encoder == "window" then {
        type: "window_feedforward",
        input_dim: d,
        hidden_dim: ff(2 * d),
        window: env.num("CODE_WINDOW"),
        num_layers: env.num("CODE_LAYERS"),
        dropout: env.num("DROPOUT"),
      } else error "CODE_ENCODER " + encoder + " is declared but not built here",
      beta: 0,
      two_views: false,
    },
  } + common.training(validation_metric, [".*"], plm_input=false)
