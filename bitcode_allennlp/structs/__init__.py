"""Structured prediction without AllenNLP: `tree_crf` (the tree CRF and CKY of the constituency parser, pure torch),
`viterbi` (batched Viterbi decoding of the taggers' linear-chain CRF, pure torch) and `trees` (PTB trees: reading,
cleaning, spans, writing; pure Python and nltk, no torch, so that the light `allennlp bits` process can read
trees). Import from the module, e.g. `from bitcode_allennlp.structs.tree_crf import cky`."""
