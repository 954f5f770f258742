// Incremental parsing (paper's GPT-2 column): a causal PLM and a causal hash layer, so a word's code depends
// only on the words to its left; spans are scored from left boundaries only. Defaults: the fixtures' tiny GPT-2.
// Set PLM to another causal model directory (e.g. a local gpt2) for real runs.
// Variables: docs/configs.md (each with its default): hash_parser.libsonnet's.
local parser = import 'hash_parser.libsonnet';

// Its own defaults (bitcode_allennlp/host/config_declaration.py): the causal PLM and hash layer.
parser()
