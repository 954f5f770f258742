"""Token indexers; importing this package registers them. `plm_words`: a PLM's word pieces of the running text."""
from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer

__all__ = ["PlmWordsIndexer"]
