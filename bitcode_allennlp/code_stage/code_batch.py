"""Old import path of the fast CPU prediction path, now `bitcode_allennlp.common.batch_tensors` (issue 18: `common/`
no longer imports a later pipeline stage). `code_batch_tensors` is `batch_tensors`."""
from bitcode_allennlp.common.batch_tensors import (  # noqa: F401 (re-exported)
    batch_tensors as code_batch_tensors, left_aligned, padded_labels, split_outputs,
)
