// Configuration variables with defaults, for the configs in this folder.
//   local env = import 'env.libsonnet';
//   env.str("PLM", env.root + "/fixtures/transformers/tiny-bert")
// Values come from environment variables (AllenNLP passes them to jsonnet; bitcode_allennlp adds BITCODE_ENV,
// the environment as JSON, so a missing variable can fall back to its default). `root` is the repository
// root, derived from where this file is, so the default paths work from any working directory.
local vars = std.parseJson(std.extVar("BITCODE_ENV"));
local parts = std.split(std.thisFile, "/");
local dir = std.join("/", parts[0:std.length(parts) - 2]);
{
  root: if dir == "" then (if std.startsWith(std.thisFile, "/") then "" else ".") else dir,
  has(name):: std.objectHas(vars, name) && vars[name] != "",
  str(name, default):: if self.has(name) then vars[name] else default,
  num(name, default):: if self.has(name) then std.parseJson(vars[name]) else default,
  bool(name, default):: if self.has(name) then std.member(["1", "true", "True", "yes"], vars[name]) else default,
}
