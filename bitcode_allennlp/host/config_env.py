"""``BITCODE_SETTINGS``: the config variables, checked, typed and with their declared defaults, handed to our
jsonnet configs before jsonnet runs.

jsonnet cannot give a missing ``std.extVar`` a default, and AllenNLP passes the environment to jsonnet as ext vars
(`allennlp.common.params._environment_variables`). An extension (not a version fix), installed when that module is
imported (`install_config_env`, patch ``config_env``; `bitcode_allennlp.host.extensions`):

* the ext vars also carry ``BITCODE_ENV``, the whole environment as a JSON object (the environment the settings
  are made from; a caller may pass its own);
* `allennlp.common.params.evaluate_file`, for a config that imports ``env.libsonnet``, first checks the config
  variables it reads against their declaration and reads each into its typed value, the declared default where it
  is not set (`bitcode_allennlp.host.config_variables.config_settings`: a bad value is a `ConfigurationError`
  ``<config>: environment variable EPOCHS="-1" must be an integer >= 1``, before jsonnet builds anything and
  before ``allennlp train`` writes anything), and passes them as the ext var ``BITCODE_SETTINGS`` (JSON), which
  ``training_configs/env.libsonnet`` only looks values up in. Without ``BITCODE_ENV`` in the ext vars (jsonnet
  called with other ext vars), the ext vars themselves are the environment;
* and then, for any config file read outside an archive, a key that names a retired option (a `code_head`'s
  `bit_flip`, a `binary_code` embedder's `code_dropout`, the `frozen_transformer_mismatched` embedder;
  `bitcode_allennlp.host.retired.config_problem`) is a `ConfigurationError` ``<config>: <key> (<option>) was
  removed in 0.3.0 (...); <what instead>``. An archive's config is read by the archive patches, which leave out
  the training-only keys and refuse the rest (`bitcode_allennlp.host.archival`).

Standard library only (imported while AllenNLP loads).
"""
import json

from bitcode_allennlp.host.patching import patch

VARIABLE = "BITCODE_ENV"
SETTINGS = "BITCODE_SETTINGS"
REASON = ("jsonnet configs get their config variables as BITCODE_SETTINGS, checked against their declared kinds and "
          "ranges, typed and with their declared defaults, before jsonnet runs (the environment: BITCODE_ENV)")


def with_checked_variables(original):
    """`evaluate_file(filename, ext_vars=...)` that first checks the config variables of ``ext_vars[BITCODE_ENV]``
    (else of the ext vars themselves) and adds ``BITCODE_SETTINGS`` for a config that imports ``env.libsonnet``."""

    def evaluate_file(filename, *args, **kwargs):
        ext_vars = kwargs.get("ext_vars")
        if isinstance(ext_vars, dict):
            from bitcode_allennlp.host.config_variables import config_settings

            environment = ext_vars.get(VARIABLE)
            environment = json.loads(environment) if isinstance(environment, str) else ext_vars
            settings = config_settings(str(filename), environment)
            if settings is not None:
                kwargs["ext_vars"] = {**ext_vars, SETTINGS: json.dumps(settings)}
        text = original(filename, *args, **kwargs)
        _check_retired(str(filename), text)
        return text

    return evaluate_file


def _check_retired(filename: str, text: str) -> None:
    """`ConfigurationError` ``<filename>: ...`` when the config `text` (JSON) names a retired option; nothing for an
    archive's config (being loaded) or a text that is not JSON (AllenNLP says what is wrong with it)."""
    from bitcode_allennlp.host.archival import loading_archive
    from bitcode_allennlp.host.retired import config_problem

    if loading_archive():
        return
    try:
        config = json.loads(text)
    except (TypeError, ValueError):
        return
    problem = config_problem(config)
    if problem is not None:
        from allennlp.common.checks import ConfigurationError

        raise ConfigurationError(f"{filename}: {problem}")


def install_config_env(module) -> None:
    """`allennlp.common.params`: `_environment_variables()` also carries `BITCODE_ENV`, and `evaluate_file` checks
    the config variables first."""

    def with_bitcode_env(original):
        def _environment_variables():
            variables = original()
            variables[VARIABLE] = json.dumps(variables)
            return variables

        return _environment_variables

    patch(module, "_environment_variables", with_bitcode_env, everywhere=True, mark="config_env", reason=REASON)
    patch(module, "evaluate_file", with_checked_variables, everywhere=True, mark="config_env", reason=REASON)
