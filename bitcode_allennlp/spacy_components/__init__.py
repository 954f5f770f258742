"""spaCy components `bitcode_tagger`, `bitcode_ner`, `bitcode_parser` (codes on tokens; tags, entities, benepar-style
trees). `nlp.add_pipe("bitcode_ner", config={"model": "model.tar.gz"})`: the factories are registered through the
`spacy_factories` entry points, or by importing this package."""
from bitcode_allennlp.spacy_components.component import (  # noqa: F401
    BitcodeComponent,
    make_bitcode_ner,
    make_bitcode_parser,
    make_bitcode_tagger,
)
from bitcode_allennlp.spacy_components.extensions import NonConstituentException, install_extensions  # noqa: F401
