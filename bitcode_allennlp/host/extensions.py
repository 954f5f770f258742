"""Our extensions of AllenNLP: features, not version fixes (those are `bitcode_allennlp.host.compat`), installed the
same way, when the AllenNLP module each one changes is first imported.

Each row names the patch, the AllenNLP module, whether the function runs just before or just after that module's
code, and the function (``module:function``, imported only then, so that this table costs nothing at start-up). Each
function lives next to the feature it installs and rebinds through `bitcode_allennlp.host.patching.patch` (the original
kept as ``__wrapped__``, applied once, listed under the patch name in `bitcode_allennlp.host.compat.report()`). The rows
of one module run in their order here.
"""
from bitcode_allennlp.host.patching import after, before, patch

EXTENSIONS = (
    # (patch name, AllenNLP module, when, the function in bitcode_allennlp that installs it)
    ("quiet_cli", "allennlp", "before", "host.console:start_cli"),
    ("light_bits", "allennlp", "before", "bits.light:start_light_bits"),  # `allennlp bits` without AllenNLP
    ("plugin", "allennlp.common.plugins", "after", "host.extensions:install_plugin"),
    ("config_env", "allennlp.common.params", "after", "host.config_env:install_config_env"),
    ("exact_recover", "allennlp.training.gradient_descent_trainer", "after", "host.recover:install_exact_recover"),
    ("self_contained_archives", "allennlp.models.archival", "after",
     "host.archival:install_self_contained_archives"),
    # an archive from someone else cannot run code: plain JSON, registered types only (SECURITY.md)
    ("untrusted_archives", "allennlp.models.archival", "after", "host.archival:install_untrusted_archives"),
    # one clear error for every bad input (host/bad_input.py, tests/test_bad_input.py)
    ("cli_errors", "allennlp.commands", "after", "host.bad_input:install_cli_errors"),
    ("config_errors", "allennlp.common.params", "after", "host.bad_input:install_config_errors"),
    ("predict_input", "allennlp.commands.predict", "after", "host.bad_input:install_predict_input"),
    ("archive_errors", "allennlp.models.archival", "after", "host.bad_input:install_archive_errors"),
    ("unstarted_runs", "allennlp.training.util", "after", "host.bad_input:install_unstarted_runs"),
    ("label_errors", "allennlp.data.instance", "after", "host.labels:install_label_errors"),
    # the quiet `allennlp` command (host/console.py, tests/test_quiet_cli.py)
    ("verbose_flag", "allennlp.commands", "after", "host.console:install_verbose_flag"),
    ("quiet_training", "allennlp.common.logging", "after", "host.console:install_quiet_training"),
    ("quiet_predict", "allennlp.commands.predict", "after", "host.console:install_quiet_predict"),
    ("evaluate_metrics", "allennlp.commands.evaluate", "after", "host.console:install_evaluate_metrics"),
)

for _name, _module, _when, _function in EXTENSIONS:
    (before if _when == "before" else after)(_module)("bitcode_allennlp." + _function)


def install_plugin(module) -> None:
    """`allennlp.common.plugins`: the `allennlp` command imports allennlp-models and ``.allennlp_plugins`` entries
    before it reads ``--include-package``; `import_plugins()` also imports `bitcode_allennlp.plugin`, so our names
    are known to ``train`` / ``evaluate`` / ``predict`` without the flag (which still works). Here and not in
    `bitcode_allennlp.plugin`, whose import registers every component."""

    def with_our_plugin(original):
        def import_plugins() -> None:
            original()
            try:
                import bitcode_allennlp.plugin  # noqa: F401

                module.logger.info("Plugin bitcode_allennlp available")
            except ModuleNotFoundError as error:
                module.logger.error(f"Plugin bitcode_allennlp could not be loaded: {error}")

        return import_plugins

    patch(module, "import_plugins", with_our_plugin, everywhere=True, mark="plugin",
          reason="allennlp's import_plugins() also imports bitcode_allennlp.plugin")
