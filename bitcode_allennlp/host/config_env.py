"""``BITCODE_ENV``: the environment as one JSON string, for the defaults of our jsonnet configs; and the check of the
config variables before jsonnet runs.

jsonnet cannot give a missing ``std.extVar`` a default, and AllenNLP passes the environment to jsonnet as ext vars
(`allennlp.common.params._environment_variables`). An extension (not a version fix), installed when that module is
imported (`install_config_env`, patch ``config_env``; `bitcode_allennlp.host.extensions`):

* the ext vars also carry ``BITCODE_ENV``, the whole environment as a JSON object, which
  ``training_configs/env.libsonnet`` parses to give each variable its default;
* `allennlp.common.params.evaluate_file` first checks the config variables that ``BITCODE_ENV`` carries against
  their declaration (`bitcode_allennlp.host.config_variables.check_config_environment`: for a config that reads
  ``env.libsonnet``, each variable it reads that is set must be of its kind and in its range, else a
  `ConfigurationError` ``<config>: environment variable EPOCHS="-1" must be an integer >= 1``), before jsonnet
  builds anything and before ``allennlp train`` writes anything.

Standard library only (imported while AllenNLP loads).
"""
import json

from bitcode_allennlp.host.patching import patch

VARIABLE = "BITCODE_ENV"
REASON = ("jsonnet configs see the environment as BITCODE_ENV (defaults for std.extVar); its config variables are "
          "checked against their declared kinds and ranges before jsonnet runs")


def with_checked_variables(original):
    """`evaluate_file(filename, ext_vars=...)` that first checks the config variables of ``ext_vars[BITCODE_ENV]``
    (nothing to check without it: jsonnet run with other ext vars)."""

    def evaluate_file(filename, *args, **kwargs):
        ext_vars = kwargs.get("ext_vars")
        if isinstance(ext_vars, dict) and isinstance(ext_vars.get(VARIABLE), str):
            from bitcode_allennlp.host.config_variables import check_config_environment

            check_config_environment(str(filename), json.loads(ext_vars[VARIABLE]))
        return original(filename, *args, **kwargs)

    return evaluate_file


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
