"""Batches by a token budget: keep collating sentences until the batch would exceed `max_tokens` words, or the
padded sub-token tensor of the PLM would exceed `max_subtokens`.

Where this sits in the pipeline: between the dataset reader and the model, as the `batch_sampler` of AllenNLP's
`MultiProcessDataLoader`, for both stages (hashing and validation). The paper (§4.1) batches this way
because the contrastive hash loss is computed over the words of a batch, not its sentences: a batch of 1024
words gives every word about the same number of negatives whatever the sentence lengths. Memory, however, follows
the PLM's padded sub-token tensor (batch size × longest sentence in word pieces): a short sentence of many word
pieces (a URL) pads every short sentence sorted next to it by words to its length (docs/results.md, "One real
training epoch, bounded memory"). `max_subtokens` bounds that tensor, and batches are then sorted by sub-tokens,
so both budgets hold.

How AllenNLP drives a batch sampler (2.10.1, `allennlp/data/data_loaders/multiprocess_data_loader.py`),
and what follows for this class:

* `get_batch_indices(instances)` always receives a **list** of instances: all of them when
  `max_instances_in_memory` is unset, otherwise successive chunks of that many (the "lazy" mode; each chunk is
  batched on its own, so each chunk has its own last, partly filled batch).
* `get_num_batches(instances)` is only called for `len(data_loader)` when all instances are in memory (the
  lazy loader raises `TypeError` instead); the trainer uses it for the progress bar and learning-rate
  schedulers. See `get_num_batches` for how we make it exact although batching is random.
* Randomness comes from Python's global `random`, like `BucketBatchSampler` / `MaxTokensBatchSampler`, so
  the config's `random_seed` fixes it.
* Distributed training needs nothing here: every worker builds its own data loader, and
  `DatasetReader.read` (`_multi_worker_islice`) gives worker `rank` only every `world_size`-th instance,
  so the sampler batches that worker's shard. With token budgets the shards can give different numbers of
  batches; `GradientDescentTrainer` then stops every worker when the first runs out (its `done_early`
  all-reduce), and warns that the surplus batches of that epoch were skipped.
"""
import logging
import random
from typing import Iterable, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.fields import TextField
from allennlp.data.instance import Instance
from allennlp.data.samplers.batch_sampler import BatchSampler
from allennlp.data.samplers.bucket_batch_sampler import add_noise_to_value

from bitcode_allennlp.common.checks import check_choice, check_range

logger = logging.getLogger(__name__)

_COUNTS = ("words", "padded")


@BatchSampler.register("token_budget")
class TokenBudgetBatchSampler(BatchSampler):
    """
    Greedy token-budget batching (paper §4.1: "we keep collating sentences until the total number of tokens
    reaches 1024").

    Instances are (optionally) sorted by a noisy length so that a batch holds sentences of similar length,
    then packed greedily in that order: a sentence joins the current batch when the batch stays within
    `max_tokens` (and `max_subtokens`, when given), otherwise it starts the next batch. The batches are then
    shuffled. A sentence over either budget forms a batch of its own; it is never dropped and never an error.

    Registered as a `BatchSampler` with name "token_budget".

    # Parameters

    max_tokens : `int`, optional (default = `1024`)
        The token budget of a batch.
    sorting_keys : `List[str]`, optional (default = `None`)
        The fields whose lengths (`len(field)`, i.e. words for a `TextField` and for a
        `SequenceLabelField`) measure an instance; with several keys an instance's size is the largest of
        them. By default the first `TextField` of the instance, which for our readers is the word-level
        text (word pieces are handled by the PLM's indexer inside it, so sizes are in words). When an
        instance has no `TextField` we fall back to AllenNLP's guess: the longest field.
    count : `str`, optional (default = `"words"`)
        How a batch is measured. `"words"`: the sum of the sizes of its sentences must be at most
        `max_tokens` (the paper's definition). `"padded"`: batch size × its longest sentence must be at
        most `max_tokens` (the padded tensor size, as AllenNLP's `MaxTokensBatchSampler` counts).
    max_subtokens : `int`, optional (default = `None`)
        A second budget, on the padded sub-token tensor: batch size × the batch's longest sentence in sub-tokens
        must be at most `max_subtokens`; whichever budget binds first closes a batch. With it, instances are
        sorted by sub-tokens (not words). An instance's sub-tokens are read from its indexed `TextField` (the
        first sorting key): the largest padding length of a `*token_ids` key, which for the PLM indexers
        (`plm_words`, AllenNLP's transformer indexers) is the word pieces with special tokens, every window's.
        A field that is not indexed yet, or has no such key (codes, single ids), counts its words. Instances
        are indexed before batching in `MultiProcessDataLoader` (training, validation, `allennlp evaluate`) and
        in `allennlp hash-corpus`.
    shuffle : `bool`, optional (default = `True`)
        Shuffle the order of the batches. With `sort_by_length=False` the instances are also shuffled
        before packing. With `shuffle=False` batching is deterministic: `padding_noise` is ignored and the
        batches come in packing order (which keeps the data order when `sort_by_length=False`, as for
        evaluation and prediction).
    sort_by_length : `bool`, optional (default = `True`)
        Sort instances by (noisy) size before packing, so that each batch holds sentences of similar
        length and little padding.
    padding_noise : `float`, optional (default = `0.1`)
        Relative noise added to each size before sorting, as in `BucketBatchSampler`, so that batches differ
        from epoch to epoch. Only used when `shuffle` and `sort_by_length` are true.
    drop_last : `bool`, optional (default = `False`)
        Drop the one incomplete batch of each packing pass: the last batch, closed because the instances
        ran out rather than because the next sentence did not fit (a last batch that reaches exactly
        `max_tokens` is complete and kept). In lazy mode this is per chunk of `max_instances_in_memory`.
    """

    def __init__(
        self,
        max_tokens: int = 1024,
        max_subtokens: Optional[int] = None,
        sorting_keys: Optional[List[str]] = None,
        count: str = "words",
        shuffle: bool = True,
        sort_by_length: bool = True,
        padding_noise: float = 0.1,
        drop_last: bool = False,
    ) -> None:
        check_range("max_tokens", max_tokens, 1)
        check_range("max_subtokens", max_subtokens, 1, optional=True)
        check_choice("count", count, _COUNTS)
        check_range("padding_noise", padding_noise, 0)
        self.max_tokens = max_tokens
        self.max_subtokens = max_subtokens
        self.sorting_keys = list(sorting_keys) if sorting_keys else None
        self.count = count
        self.shuffle = shuffle
        self.sort_by_length = sort_by_length
        self.padding_noise = padding_noise if (shuffle and sort_by_length) else 0.0
        self.drop_last = drop_last
        # The batches of the next epoch, drawn by `get_num_batches` so that `len(data_loader)` is exact:
        # (words then sub-tokens of the instances they were drawn for, batches).
        self._planned: Optional[Tuple[Tuple[int, ...], List[List[int]]]] = None
        self._warned_long = False

    # ----------------------------------------------------------------------------------------- sizes
    def _guess_sorting_keys(self, instances: Sequence[Instance]) -> None:
        first = instances[0]
        for name, field in first.fields.items():
            if isinstance(field, TextField):
                self.sorting_keys = [name]
                return
        # No TextField: AllenNLP's guess, the longest field among the first few instances.
        longest, longest_name = -1, None
        for instance in instances[:12]:
            for name, field in instance.fields.items():
                if len(field) > longest:
                    longest, longest_name = len(field), name
        if longest_name is None:
            raise ConfigurationError("Cannot guess a sorting key: the instances have no fields.")
        self.sorting_keys = [longest_name]

    def _sizes(self, instances: Sequence[Instance]) -> List[int]:
        """Each instance's size in words (the largest of its sorting keys' lengths)."""
        if not self.sorting_keys:
            self._guess_sorting_keys(instances)
            logger.info(f"TokenBudgetBatchSampler measures instances by {self.sorting_keys}")
        sizes = []
        for instance in instances:
            size = 0
            for name in self.sorting_keys:  # type: ignore[union-attr]
                if name not in instance.fields:
                    raise ConfigurationError(
                        f'Sorting key "{name}" is not a field in instance. '
                        f"Available fields/keys are {list(instance.fields.keys())}."
                    )
                size = max(size, len(instance.fields[name]))
            sizes.append(size)
        return sizes

    def _subtoken_sizes(self, instances: Sequence[Instance], sizes: List[int]) -> List[int]:
        """Each instance's sub-tokens (see `max_subtokens`); its words when its field is not indexed."""
        name = self.sorting_keys[0]  # type: ignore[index]
        subtokens = []
        for instance, size in zip(instances, sizes):
            field = instance.fields[name]
            pieces = 0
            if isinstance(field, TextField) and field._indexed_tokens is not None:
                pieces = max((length for key, length in field.get_padding_lengths().items()
                              if key.endswith("token_ids")), default=0)
            subtokens.append(max(pieces, size))
        return subtokens

    def _measure(self, instances: Sequence[Instance]) -> Tuple[List[int], List[int]]:
        """(words, sub-tokens) per instance; sub-tokens are the words when there is no `max_subtokens`."""
        sizes = self._sizes(instances)
        return sizes, (self._subtoken_sizes(instances, sizes) if self.max_subtokens is not None else sizes)

    # -------------------------------------------------------------------------------------- packing
    def _costs(self, total: int, longest: int, longest_pieces: int, num: int) -> Tuple[int, Optional[int]]:
        """(words as `count` measures them, padded sub-tokens or None) of a batch of `num` instances with these
        words (sum, max) and max sub-tokens."""
        words = total if self.count == "words" else longest * num
        return words, (None if self.max_subtokens is None else longest_pieces * num)

    def _fits(self, total: int, longest: int, longest_pieces: int, num: int) -> bool:
        """Whether such a batch is within both budgets."""
        words, pieces = self._costs(total, longest, longest_pieces, num)
        return words <= self.max_tokens and (pieces is None or pieces <= self.max_subtokens)  # type: ignore

    def _full(self, total: int, longest: int, longest_pieces: int, num: int) -> bool:
        """Whether such a batch reached a budget exactly (a last batch that does is complete, see `drop_last`)."""
        words, pieces = self._costs(total, longest, longest_pieces, num)
        return words >= self.max_tokens or (pieces is not None and pieces >= self.max_subtokens)  # type: ignore

    def _pack(self, order: List[int], sizes: List[int], pieces: List[int]) -> List[List[int]]:
        """Greedy packing of `order` (indices into `sizes`) under the budgets."""
        batches: List[List[int]] = []
        group: List[int] = []
        total = longest = longest_pieces = 0
        num_long = 0
        complete = True  # whether `group` was closed by the budget; only matters for the last one
        for index in order:
            size, size_pieces = sizes[index], pieces[index]
            if not self._fits(size, size, size_pieces, 1):
                # An over-long sentence is a batch of its own, wherever it falls in the order.
                num_long += 1
                if group:
                    batches.append(group)
                batches.append([index])
                group, total, longest, longest_pieces = [], 0, 0, 0
                continue
            if group and not self._fits(total + size, max(longest, size), max(longest_pieces, size_pieces),
                                        len(group) + 1):
                batches.append(group)
                group, total, longest, longest_pieces = [], 0, 0, 0
            group.append(index)
            total += size
            longest = max(longest, size)
            longest_pieces = max(longest_pieces, size_pieces)
        if group:
            complete = self._full(total, longest, longest_pieces, len(group))
            batches.append(group)
        if self.drop_last and batches and not complete:
            batches.pop()
        if num_long and not self._warned_long:
            budget = f"max_tokens={self.max_tokens}" + (
                f" or max_subtokens={self.max_subtokens}" if self.max_subtokens is not None else "")
            logger.warning(f"{num_long} instance(s) are longer than {budget}; each forms a batch of its own "
                           "(logged once).")
            self._warned_long = True
        return batches

    def _draw_batches(self, sizes: List[int], pieces: List[int]) -> List[List[int]]:
        order = list(range(len(sizes)))
        if self.sort_by_length:
            # Sorted by what the tightest tensor costs: sub-tokens when they are budgeted, words otherwise.
            noisy = [add_noise_to_value(size, self.padding_noise) for size in pieces]
            order.sort(key=lambda i: noisy[i])  # stable: equal sizes keep the data order without noise
        elif self.shuffle:
            random.shuffle(order)
        batches = self._pack(order, sizes, pieces)
        if self.shuffle:
            random.shuffle(batches)
        return batches

    # ------------------------------------------------------------------------------ BatchSampler API
    def get_batch_indices(self, instances: Sequence[Instance]) -> Iterable[List[int]]:
        """
        Yields the batches of one epoch (or one lazy chunk) as lists of indices into `instances`; every
        instance appears in exactly one batch (unless `drop_last` drops the incomplete last one).
        """
        if len(instances) == 0:
            return
        sizes, pieces = self._measure(instances)
        planned, self._planned = self._planned, None
        if planned is not None and planned[0] == tuple(sizes + pieces):
            batches = planned[1]
        else:
            batches = self._draw_batches(sizes, pieces)
        yield from batches

    def get_num_batches(self, instances: Sequence[Instance]) -> int:
        """
        The number of batches `get_batch_indices` will yield for `instances`.

        Batching is random (noisy sort), so the count can change from epoch to epoch. To make it exact we
        draw the next epoch's batches here and keep them: the next `get_batch_indices` call on instances of
        the same sizes (the loader's next epoch) yields exactly those. Calling this again before that returns
        the same number. This draws from `random` exactly as an epoch would.
        """
        if len(instances) == 0:
            return 0
        sizes, pieces = self._measure(instances)
        key = tuple(sizes + pieces)
        if self._planned is None or self._planned[0] != key:
            self._planned = (key, self._draw_batches(sizes, pieces))
        return len(self._planned[1])

    def get_batch_size(self) -> Optional[int]:
        """Batches have no fixed number of instances."""
        return None
