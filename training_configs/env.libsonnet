// Configuration variables with defaults, for the configs in this folder.
//   local env = import 'env.libsonnet';
//   env.str("PLM", env.root + "/fixtures/transformers/tiny-bert")
// Values come from environment variables (AllenNLP passes them to jsonnet; bitcode_allennlp adds BITCODE_ENV,
// the environment as JSON, so a missing variable can fall back to its default). `root` is the repository
// root, derived from where this file is, so the default paths work from any working directory (in an installed
// package, the folder of its copy of the configs and fixtures: bitcode_allennlp/resources.py).
// Types: `num` reads a decimal number (`24`, `-1`, `7e-5`, `.5`, `+2`; surrounding spaces ignored), `bool` one of
// 1/0, true/false, yes/no, on/off (any case); anything else stops the config with an error that names the
// variable and its value (JSON-quoted, so stray spaces show), e.g. `environment variable K="abc" is not a number`.
// An empty variable counts as unset.
local vars = std.parseJson(std.extVar("BITCODE_ENV"));
local parts = std.split(std.thisFile, "/");
local dir = std.join("/", parts[0:std.length(parts) - 2]);
local spaces = " \t\n\r";
local isDigits(s) = std.length(s) > 0 && std.length(std.filter(function(c) c < "0" || c > "9", std.stringChars(s))) == 0;
local quoted(name) = "environment variable " + name + "=" + std.escapeStringJson(vars[name]);
local number(name) =
  local text = std.stripChars(vars[name], spaces);
  local negative = std.startsWith(text, "-");
  local unsigned = if negative || std.startsWith(text, "+") then std.substr(text, 1, std.length(text) - 1) else text;
  local e = std.split(std.asciiLower(unsigned), "e");
  local m = std.split(e[0], ".");
  local whole = m[0];
  local fraction = if std.length(m) == 2 then m[1] else "";
  local exponent = if std.length(e) == 2 then e[1] else "";
  local exponentDigits = if std.startsWith(exponent, "+") || std.startsWith(exponent, "-")
    then std.substr(exponent, 1, std.length(exponent) - 1) else exponent;
  local valid = std.length(e) <= 2 && std.length(m) <= 2
    && (isDigits(whole) || isDigits(fraction))
    && (whole == "" || isDigits(whole)) && (fraction == "" || isDigits(fraction))
    && (std.length(e) == 1 || isDigits(exponentDigits));
  local stripped = std.lstripChars(whole, "0");
  if !valid then error quoted(name) + " is not a number"
  else std.parseJson((if negative then "-" else "") + (if stripped == "" then "0" else stripped)
                     + (if fraction == "" then "" else "." + fraction) + (if exponent == "" then "" else "e" + exponent));
local boolean(name) =
  local text = std.asciiLower(std.stripChars(vars[name], spaces));
  if std.member(["1", "true", "yes", "on"], text) then true
  else if std.member(["0", "false", "no", "off"], text) then false
  else error quoted(name) + " is not a boolean (1/0, true/false, yes/no, on/off)";
{
  root: if dir == "" then (if std.startsWith(std.thisFile, "/") then "" else ".") else dir,
  has(name):: std.objectHas(vars, name) && vars[name] != "",
  str(name, default):: if self.has(name) then vars[name] else default,
  num(name, default):: if self.has(name) then number(name) else default,
  bool(name, default):: if self.has(name) then boolean(name) else default,
}
