"""Options retired behind a version bump (`bitcode_allennlp.host.config_declaration.RETIRED`, CHANGELOG.md): the one
check that no retired option is named, for the environment, the training configs and the archives.

* The environment (`environment_problem`) and the config variables a config reads (`read_problem`):
  `config_variables.config_settings` raises the message as a `ConfigurationError` ``<config>: CODE_ENCODER=lstm was
  removed in 0.3.0 (...); unset CODE_ENCODER ...`` for every config that reads config variables (hashing-stage
  configs too: a run's settings fail at its first step), before jsonnet runs.
* A training config (`config_problem`, on the config jsonnet made): `evaluate_file` (the ``config_env`` extension)
  raises ``<config>: model.code_head.bit_flip (CODE_HEAD_FLIP) was removed in 0.3.0 (...)`` for a config file read
  outside an archive, before anything is built.
* An archive's ``config.json``: an option that archives cannot load with (`Retired.archived` ``refused``: the
  legacy ``frozen_transformer_mismatched`` embedder) is refused by `archival.check_archive` (`archive_problem`);
  the keys of training-only options (``dropped``: ``code_head.bit_flip``, the ``binary_code`` embedder's
  ``code_dropout``, which every 0.2 archive of those models holds, mostly at 0) are left out when the archive's
  model is built (`drop_retired_keys`): they were no part of the trained weights nor of prediction, so the archive
  predicts as before. A validation-stage archive of ``CODE_ENCODER=lstm`` names AllenNLP's own ``lstm`` encoder
  and loads unchanged.

Standard library only (imported while AllenNLP loads).
"""
import logging
from typing import Any, List, Mapping, Optional, Tuple

from bitcode_allennlp.host.archive_files import config_dicts
from bitcode_allennlp.host.config_declaration import RETIRED
from bitcode_allennlp.host.config_kinds import Retired

logger = logging.getLogger(__name__)

RETIRED_VARIABLES = {retired.variable: retired for retired in RETIRED
                     if retired.variable and "=" not in retired.option}
"""Config variables retired as a whole (any value)."""


def environment_problem(environment: Mapping[str, Any]) -> Optional[str]:
    """The message of the first retired option that `environment` sets, or `None`."""
    return next((retired.message() for retired in RETIRED if retired.named_by(environment)), None)


def read_problem(read: Any) -> Optional[str]:
    """The message of the first retired config variable among the variables `read` by a config, or `None`."""
    return next((RETIRED_VARIABLES[name].message() for name in sorted(read) if name in RETIRED_VARIABLES), None)


def _matches(pattern: str, key: str, params: dict) -> Optional[str]:
    """The field of `params` (a dict under `key`) that `pattern` (`Retired.keys`) names, ``""`` for the dict
    itself, or `None`."""
    selector, _, field = pattern.partition(".")
    if selector.startswith("type="):
        if params.get("type") != selector[len("type="):]:
            return None
    elif key != selector:
        return None
    if not field:
        return ""
    return field if field in params else None


def retired_keys(config: Any) -> List[Tuple[Retired, str, dict, str]]:
    """Every place a (JSON) config names a retired option: (the option, where, the dict, its field or ``""``)."""
    found = []
    for where, key, params in config_dicts(config):
        for retired in RETIRED:
            for pattern in retired.keys:
                field = _matches(pattern, key, params)
                if field is not None:
                    found.append((retired, f"{where}.{field}" if field else f"{where}.type", params, field))
    return found


def config_problem(config: Any) -> Optional[str]:
    """The message of the first retired option that a training config (a dict) names, or `None`."""
    return next((retired.message(where) for retired, where, _, _ in retired_keys(config)), None)


def archive_problem(config: Any) -> Optional[str]:
    """What refuses an archive whose `config` names a retired option it cannot load with, or `None`."""
    return next((f"refused: {retired.message(where)}"
                 for retired, where, _, _ in retired_keys(config) if retired.archived == "refused"), None)


def drop_retired_keys(config: Any) -> List[str]:
    """Leaves out, in place, the keys of the training-only retired options that an archive's `config` names (see
    the module docstring); returns where they were."""
    dropped = []
    for retired, where, params, field in retired_keys(config):
        if retired.archived == "dropped" and field:
            value = params.pop(field)
            dropped.append(where)
            logger.info(f"{where} = {value!r} left out: {retired.option} was removed in {retired.version} "
                        "(training only: no part of the trained weights or of prediction)")
    return dropped
