"""``BITCODE_ENV``: the environment as one JSON string, for the defaults of our jsonnet configs.

jsonnet cannot give a missing ``std.extVar`` a default, and AllenNLP passes the environment to jsonnet as ext vars
(`allennlp.common.params._environment_variables`). An extension (not a version fix), installed when that module is
imported (`install_config_env`, patch ``config_env``; `bitcode_allennlp.extensions`): the ext vars also carry
``BITCODE_ENV``, the whole environment as a JSON object, which ``training_configs/env.libsonnet`` parses to give
each variable its default. Standard library only (imported while AllenNLP loads).
"""
import json

from bitcode_allennlp.patching import patch

VARIABLE = "BITCODE_ENV"


def install_config_env(module) -> None:
    """`allennlp.common.params`: `_environment_variables()` also carries `BITCODE_ENV`."""

    def with_bitcode_env(original):
        def _environment_variables():
            variables = original()
            variables[VARIABLE] = json.dumps(variables)
            return variables

        return _environment_variables

    patch(module, "_environment_variables", with_bitcode_env, everywhere=True, mark="config_env",
          reason="jsonnet configs see the environment as BITCODE_ENV (defaults for std.extVar)")
