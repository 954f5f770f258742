// The config variables of the configs in this folder, looked up by name:
//   local env = import 'env.libsonnet';
//   env.num("K")   env.bool("FREEZE_PLM")   env.str("PLM")   env.get("SEED")   env.has("MAX_INSTANCES")
// Each variable is declared once, in Python (bitcode_allennlp/host/config_declaration.py: kind, range, default,
// meaning; docs/configs.md's table is rendered from it). Before jsonnet runs, bitcode_allennlp checks every
// variable the config reads, reads it into its typed value (a number, a boolean, a string; null: unset, or
// MAX_LENGTH=none), fills in the config's declared default where it is not set (an empty variable counts as
// unset), and hands them over as the ext var BITCODE_SETTINGS (a JSON object): no parsing and no defaults here.
// So evaluate these configs through AllenNLP with bitcode_allennlp installed (`allennlp train`, `Params.from_file`,
// `bitcode_allennlp.train`); the plain `jsonnet` command stops with "Undefined external variable:
// BITCODE_SETTINGS" unless given them:
//   jsonnet --ext-str BITCODE_SETTINGS="$(python -m bitcode_allennlp.host.config_variables --settings CONFIG)" CONFIG
// `root` is the repository root, derived from where this file is (in an installed package, the folder of its copy
// of the configs and fixtures): the folder bitcode_allennlp/resources.py's root() names, against which Python
// resolves the declared default paths (host/config_variables.py's config_root) of every config, wherever the config
// is (a config in a task's own folder imports this file by a relative path and gets the same root).
local settings = std.parseJson(std.extVar("BITCODE_SETTINGS"));
local parts = std.split(std.thisFile, "/");
local dir = std.join("/", parts[0:std.length(parts) - 2]);
local value(name) =
  if std.objectHas(settings, name) then settings[name]
  else error "config variable " + name + " is not in BITCODE_SETTINGS (is it declared in bitcode_allennlp/host/"
    + "config_declaration.py, and read as env.num/bool/str/get/has(\"" + name + "\")?)";
local typed(name, check, what) =
  local v = value(name);
  if v == null || check(v) then v else error "config variable " + name + " is not " + what;
{
  root: if dir == "" then (if std.startsWith(std.thisFile, "/") then "" else ".") else dir,
  // Whether the variable has a value: false for an optional one that is not set (MAX_INSTANCES, HEAD_LR, ...).
  has(name):: value(name) != null,
  get(name):: value(name),
  str(name):: typed(name, std.isString, "a string"),
  num(name):: typed(name, std.isNumber, "a number"),
  bool(name):: typed(name, std.isBoolean, "a boolean"),
}
