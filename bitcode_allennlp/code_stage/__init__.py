"""The second stage, on codes: the validation stage (paper §3.3, Algorithm 1 `reannotate` and `validation_step`).

`hash_corpus` (the `allennlp hash-corpus` subcommand) re-annotates a corpus with a trained hashing model into a
codes corpus (JSON lines), `shards` keeps the record beside it and merges shards; `binary_codes` reads it back with
codes as the only model input; `binary_code` (indexer and embedder, Eq. 9) turns the hex codes into vectors;
`experiment` runs both stages end to end.
(Named after what it holds, not "validation", which is also AllenNLP's name for the dev reader and data.)
"""
