"""The declaration of every config variable: its kind, range, default (each config's own where they differ) and
meaning, one `Group` per row of docs/configs.md's table (`bitcode_allennlp.host.config_kinds` says what each field
means). The only place a default is written: the configs (`training_configs/*.jsonnet`) get every value, defaults
filled in, from `bitcode_allennlp.host.config_variables.config_settings`, and write none themselves."""
from typing import Dict, Optional, Tuple

from bitcode_allennlp.host.config_kinds import (FROM_CODES, Group, Retired, Variable, _bool, _choice, _int, _num,
                                                _probability)

FIXTURE_DATA: Dict[str, Tuple[str, str]] = {
    "ner_hash READER=conll_columns": ("conll2003/btc_train.conll", "conll2003/btc_dev.conll"),
    "ner_hash": ("conll2012/train", "conll2012/development"),
    "pos_hash": ("ptb/craft_train.tree", "ptb/craft_dev.tree"),
    "parse_hash*": ("ptb/craft_train.tree", "ptb/craft_dev.tree"),
    "ner_code": ("codes/ner.train.jsonl", "codes/ner.dev.jsonl"),
    "pos_code": ("codes/pos.train.jsonl", "codes/pos.dev.jsonl"),
    "parse_code": ("codes/parse.train.jsonl", "codes/parse.dev.jsonl"),
}
"""Each config's default TRAIN_DATA and DEV_DATA, under fixtures/data/ (NER's by READER)."""


def _fixtures(split: str) -> Tuple[Tuple[str, Optional[str]], ...]:
    return tuple((config, "fixtures/data/" + paths[split == "dev"]) for config, paths in FIXTURE_DATA.items())


MEASURED = "measured no help: REPRODUCTION.md, BTC NER"
"""Where the retired options were measured (REPRODUCTION.md's headline results and its "Why the gap" paragraph,
`benchmarks/results/full_data/btc_ner_codehead2_e3_hflip01.json`, `btc_ner_validation_noise.json`)."""


GROUPS: Tuple[Group, ...] = (
    Group((Variable("PLM", "plm", "fixtures/transformers/tiny-bert",
                    by_config=(("parse_hash_incremental", "fixtures/transformers/tiny-gpt2"),),
                    shown="`fixtures/transformers/tiny-bert` (incremental parsing: `tiny-gpt2`; tiny **random** "
                          "models: smoke runs only, scores mean nothing)"),),
          "a transformers model directory (or hub name, if you have a network); any family: [plms.md](plms.md)"),
    Group((Variable("PLM_LAYER", "plm_layer", "last"),),
          "which hidden states feed the hash layer: `last`, a layer number (`0` the embeddings, negative from the "
          "top) or `mix` (AllenNLP's scalar mix of all layers; not with `FREEZE_PLM`)"),
    Group((Variable("TRAIN_DATA", "path", None, by_config=_fixtures("train")),
           Variable("DEV_DATA", "path", None, by_config=_fixtures("dev"))),
          "corpus paths", default="fixture files"),
    Group((_int("K", "24", 1, 63, by_config=(("*_code", FROM_CODES),)),),
          "bits per word (heads of the hash layer), 1 ≤ K ≤ 63; the validation stage reads it from its `TRAIN_DATA` "
          "codes file (`num_bits`), and a `K` set to another number is an error"),
    Group((_int("HEAD_DIM", "64"),), "d_h, size of each head"),
    Group((_num("BETA", "0.005", by_config=(("pos_hash", "0.05"), ("parse_hash*", "0.001"))),),
          "β of Eq. 10; `0` is the baseline"),
    Group((_bool("TWO_VIEWS", "true"), _choice("VIEWS", "sequential", "sequential", "batched", "hash_layer")),
          "second dropout view, whatever β (the models' `two_views` defaults to true too); with `BETA=0` the "
          "paper's baseline (Algorithm 1 sums two task losses whatever β), `false` a one-view baseline (β must be "
          "0; the validation-stage configs set `two_views: false` themselves); `VIEWS`: two passes, one pass over "
          "the batch stacked twice (`batched`: 1.10-1.35x two passes on an H200, no faster on 2 CPU cores), or one "
          "PLM pass and two hash-layer passes (`hash_layer`, beyond the paper)"),
    Group((_choice("HASH_LOSS_REACH", "plm", "plm", "hash_layer"),),
          "beyond the paper: `hash_layer` stops the hash loss's gradient at the hash layer's inputs (it trains the "
          "hash layer's queries and keys only); with `QK_ONLY=true` and `CODE_HEAD_REACH=hash_layer` the PLM is fit "
          "by the task loss alone"),
    Group((_num("TAU", "0.1", 0, low_open=True), _choice("SIMILARITY", "cos_sign", "cos_sign", "cos"),
           _choice("OBJECTIVE", "hash", "hash", "self", "sup", "max_pos")),
          "loss variants of Table 2 (`cos`; `self`, `sup`); `max_pos`: the authors' later paper, not the 24-bit one"),
    Group((_num("LR", "5e-5", 0, low_open=True, by_config=(("ner_hash", "7e-5"), ("ner_code", "3e-3"),
                                                          ("pos_code", "5e-4"), ("parse_code", "1e-3"))),
           _num("HEAD_LR", None, 0, low_open=True, shown="= `LR`"),
           _probability("DROPOUT", "0.1", by_config=(("parse_hash*", "0.5"), ("ner_code", "0.2"),
                                                     ("parse_code", "0.3"))), _probability("WARMUP", "0.06"),
           _num("WEIGHT_DECAY", "0.01"), _num("GRAD_NORM", "1.0", 0, low_open=True)),
          "optimisation (AdamW, Table 6); `HEAD_LR` gives the new layers (all but the PLM) their own rate"),
    Group((_int("MAX_INSTANCES", None, shown="all"),),
          "train on at most this many sentences (budget runs); never caps dev"),
    Group((_int("DEV_MAX_INSTANCES", None, shown="all"),),
          "validate, evaluate and re-annotate only the first N dev sentences (budget runs; say so next to the "
          "score)"),
    Group((_bool("FREEZE_PLM", "false"), _probability("PLM_DROPOUT", "0.1")),
          "budget runs: the PLM frozen in eval mode, its word vectors cached per sentence for the process "
          "(`frozen_plm_words`), dropout on them for the two views; only the hash layer and head train. The paper "
          "fine-tunes the PLM"),
    Group((_probability("MASK_PROB", "0"),), "training, not with `FREEZE_PLM`: each word piece → the mask token "
          "with this probability; from the authors' later paper (Wang & Utiyama 2024), beyond the 24-bit paper"),
    Group((_int("CHECKPOINT_EVERY", None, shown="unset (epoch ends only)"),),
          "also checkpoint every N batches, for `--recover` mid-epoch"),
    Group((_int("EPOCHS", "3", by_config=(("*_code", "20"),)), _int("MAX_TOKENS", "1024"),
           _int("MAX_SUBTOKENS", "1024"),
           Variable("MAX_LENGTH", "max_length", "512", low=8)),
          "epochs; words per batch (the hash loss's unit, §4.1); padded sub-tokens per batch (batch size × longest "
          "sentence in word pieces: the PLM's memory; whichever budget binds first closes a batch, and a sentence "
          "over either trains alone); PLM window in word pieces, special tokens included (`none`: the tokenizer's "
          "own `model_max_length`); a longer sentence is read in overlapping windows, a causal PLM's with left "
          "context only ([plms.md](plms.md#long-sentences))"),
    Group((_choice("READER", None, "ontonotes_hash", "conll_columns", "ptb_hash",
                   "conllu_pos", choices_by_config={
                       "ner_hash.jsonnet": (("ontonotes_hash", "conll_columns"), "an NER reader"),
                       "pos_hash.jsonnet": (("ptb_hash", "conllu_pos"), "a POS reader")},
                   by_config=(("ner_hash", "ontonotes_hash"), ("pos_hash", "ptb_hash")),
                   shown="`ontonotes_hash` / `ptb_hash`"),
           _choice("TOKEN_POLICY", "strict", "strict", "repair"), _bool("SKIP_INVALID", "false")),
          "reader (NER: `ontonotes_hash` or `conll_columns`, each with its own fixture defaults; POS: `ptb_hash` or "
          "`conllu_pos`); `repair` for corpora with empty / whitespace tokens; skip malformed sentences"),
    Group((_choice("INPUT_SCHEME", "IOB2", "IOB2", "BIO", "IOB1", "BIOUL", "BIOES",
                     requires=("READER", "conll_columns", "{} reads bracketed entities")),),
          "NER with `READER=conll_columns`: the file's tags, `IOB2` (= `BIO`), `IOB1` (the original CoNLL-2003 "
          "release), `BIOUL` or `BIOES`; converted to the model's BIOUL"),
    Group((_bool("RESIDUAL", "true"), _bool("QK_ONLY", "false")),
          "`false`: no residual around the hash layer's attention, the literal Eq. 8 (study option); `QK_ONLY=true`: "
          "a hash layer of queries and keys alone, the task head reads the PLM (the authors' later paper)"),
    Group((_choice("TASK_LOSS", "mean", "mean", "sum", "word"),),
          "CRF loss over a batch: `mean` per sentence, `sum`, or `word` (per word, like the hash loss)"),
    Group((_bool("TRAINING_METRICS", "true"),),
          "taggers (both stages): `false` skips Viterbi decoding in training forwards (no training `accuracy` / "
          "span F1 logged); dev metrics are exact either way"),
    Group((_num("CODE_HEAD", "0"), _int("CODE_HEAD_DIM", "256"),
           _choice("CODE_HEAD_REACH", "plm", "plm", "hash_layer")),
          "beyond the paper (hashing-stage taggers and parsers): weight of a code-reading head (`0`: none), an MLP "
          "of `CODE_HEAD_DIM` hidden units on sign(s) with a straight-through gradient, trained on the gold "
          "per-word labels (for parsing the trees' POS tags, then read too); it pushes the task into the bits; "
          "`code_head_accuracy` is logged; `CODE_HEAD_REACH=hash_layer` stops its gradient at the hash layer's "
          "inputs (the PLM is fit by the task and hash losses alone; default `plm`)"),
    Group((_num("CODE_SPAN_HEAD", "0"), _int("CODE_SPAN_HEAD_DIM", "256")),
          "beyond the paper (hashing-stage parsers): weight of a span code-reading head (`0`: none), an MLP of "
          "`CODE_SPAN_HEAD_DIM` hidden units on each word's sign(s) (straight-through gradient), fenceposts and a "
          "biaffine span scorer, trained with the tree CRF loss on the gold spans; it pushes constituency structure "
          "into the bits; `code_span_head_loss` is logged"),
    Group((_int("SPAN_MLP_DIM", "500"), _int("LABEL_MLP_DIM", "100"), _probability("MLP_DROPOUT", "0.33")),
          "parsers (both stages): hidden sizes of the span and label MLPs, their dropout"),
    Group((_choice("BOUNDARY", "split", "split", "left"),),
          "validation-stage parser: its fenceposts, `split` as the hashing-stage parser's, `left` for codes of an "
          "incremental model (the hashing-stage parser takes `left` from `CAUSAL`)"),
    Group((_int("CODE_DIM", "128"), _int("CODE_HEADS", "4"), _int("CODE_FF", None, 2, shown="2·d")),
          "validation stage: d, rounded up to a multiple of K and of the heads (144 for K = 24, 0.18M parameters "
          "for POS; `CODE_DIM=256` gives the paper's size, 0.58M); attention heads; feed-forward size"),
    Group((_choice("CODE_ENCODER", "transformer", "transformer", "window"),
           _int("CODE_WINDOW", "1", 0), _int("CODE_LAYERS", "1")),
          "validation stage: the paper's one-layer transformer, or `window` (beyond the paper: `CODE_LAYERS` "
          "convolutions over `CODE_WINDOW` words on each side, output size `CODE_FF`, `window_feedforward`; much "
          "cheaper at inference)"),
    Group((_probability("CODE_BIT_FLIP", "0"),),
          "validation stage, beyond the paper, training only: probability of flipping each bit of a train code (the "
          "train codes come from a hashing model fit to those sentences, so they are cleaner than dev codes)"),
    Group((Variable("CUDA_DEVICE", "cuda", "-1", low=-1), _int("WORKERS", "1"),
           Variable("SEED", "seed", "13370, 1337, 133", low=0, high=2 ** 32 - 1,
                    shown="AllenNLP's (13370, 1337, 133)"),
           _bool("CAUSAL", "false", by_config=(("parse_hash_incremental", "true"),))),
          "device; `WORKERS=2` trains with torch DDP (gloo on CPU); seeds; causal hash layer"),
)

VARIABLES: Dict[str, Variable] = {v.name: v for group in GROUPS for v in group.variables}
"""Every config variable by name, in the table's order."""

RETIRED: Tuple[Retired, ...] = (
    Retired("CODE_HEAD_FLIP", "0.3.0", MEASURED + " (0.1 lowered both stages, 75.73 / 75.50 against 76.97 / 76.76)",
            "leave it out: the code-reading head (CODE_HEAD) reads the codes as they are",
            keys=("code_head.bit_flip",)),
    Retired("CODE_DROPOUT", "0.3.0", MEASURED + " (0.15 gave 75.68, inside the seed range 75.22-75.74)",
            "leave it out; CODE_BIT_FLIP is the validation-stage noise that helps",
            keys=("type=binary_code.code_dropout",)),
    Retired("CODE_ENCODER=lstm", "0.3.0", MEASURED + " (75.54, and 75.89 with CODE_BIT_FLIP=0.2, against the "
            "transformer's 75.49 and 76.41)",
            "unset CODE_ENCODER to use the transformer code encoder (or CODE_ENCODER=window)"),
    Retired("frozen_transformer_mismatched", "0.3.0", "the legacy mismatched embedder, kept for archives made "
            "before plm_words; frozen_plm_words reads the same pieces for WordPiece PLMs and the right ones for "
            "byte-level BPE (docs/plms.md)",
            "use frozen_plm_words with the plm_words indexer (FREEZE_PLM=true); an archive that names it loads "
            "with bitcode_allennlp 0.2.x only", keys=("type=frozen_transformer_mismatched",), archived="refused"),
)
"""Options retired behind a version bump (CHANGELOG.md): naming one is an error that says so
(`bitcode_allennlp.host.retired`); docs/configs.md's table of retired options is rendered from here."""
