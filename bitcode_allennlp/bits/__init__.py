"""Reading the codes: bit statistics, pictures and Hamming-space search over a codes corpus.

The `allennlp bits` subcommand (`command.py`) and the same as a Python API:

* `corpus`: a codes corpus as numpy arrays: uint64 codes, sentence ids, positions, label views (tag, prefix, type);
* `stats` (`allennlp bits stats`): per-bit balance and entropy, bit correlation, I(code; label), I(bit; label),
  pair agreement, ceil(log2 L), each table with its meaning and takeaway; under it `explain` (bits ranked by
  I(bit; label), and the labels each bit is 1 on and 0 on);
* `heatmap` (`allennlp bits heatmap`): P(bit i = 1 | label) per label view as PNG and JSON (paper Figure 4);
* `diff` (`allennlp bits diff`): two sentences' codes aligned, differing bits marked, text and HTML (Figure 3);
* `index` (`allennlp bits index`, `search`, `precision`): Hamming index on disk (FAISS binary index, exact flat by
  default, multi-hash for radius search, HNSW / IVF approximate; or a numpy scan), top-k and radius search with ties
  in corpus order, precision@k by label (DHIM's protocol); under it `hamming` (the numpy scan), `faiss_index`,
  `index_files` (the folder and its checked reader) and `precision` (the scoring);
* `probe` (`allennlp bits probe`): do the codes carry the task? dev accuracy of code majority, Hamming k-NN votes,
  linear and MLP probes beside the word-majority baseline; same-word distance, eta^2 per bit.

Import from the module (`from bitcode_allennlp.bits.index import HammingIndex`): the package imports nothing, so
that `bits.light` (the light `allennlp bits` process) imports no module that takes AllenNLP's `ConfigurationError`
from `host.names` before `light.run_bits` sets `host.names.LIGHT`.
"""
