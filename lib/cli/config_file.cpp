// --config FILE.json: a command's options from a JSON object (tvie/options_file.hpp reads it), the command line
// winning (options.hpp).
#include <algorithm>
#include <map>
#include <utility>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/options_file.hpp>

#include "options.hpp"

namespace tvie::cli {
namespace {

// What apply_config_file did, for run_options() and option_for_field's "(from FILE)".
struct AppliedConfig {
  std::string file;
  std::string message;  // logged (debug) by the first run_options(), after the command has set the log level
  std::vector<std::pair<std::string, std::string>> set;  // long name, value, in key order (read_options_file)
};
AppliedConfig& applied() {
  static AppliedConfig a;
  return a;
}

constexpr const char* kConfigFlag = "--config";

// The options a file may set: every long option of the command but --config and --help, sorted.
std::map<std::string, CLI::Option*> configurable_options(CLI::App* cmd) {
  std::map<std::string, CLI::Option*> out;
  for (CLI::Option* option : cmd->get_options()) {
    for (const auto& name : option->get_lnames())
      if (name != "help" && name != kConfigFlag + 2) out[name] = option;
  }
  return out;
}

std::string keys_text(const std::map<std::string, CLI::Option*>& options) {
  std::string text;
  for (const auto& [name, option] : options) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

void add_config_option(CLI::App* cmd) {
  cmd->add_option(kConfigFlag, "")  // no variable: apply_config_file reads it from the option itself
      ->description(
          "Read this command's options from a JSON object in this file, each key a long option without its "
          "dashes (\"batch\": 8, \"infer-dtype\": \"int8\", \"overlap\": true, \"batch\": [1, 2, 4]); options "
          "given on the command line win. The report's context records the file and what it set")
      ->type_name("FILE");
  record_field(cmd, "config", kConfigFlag);
}

void apply_config_file(CLI::App* cmd) {
  const CLI::Option* config_option = cmd->get_option_no_throw(kConfigFlag);
  if (config_option == nullptr || config_option->count() == 0) return;
  const std::string path = config_option->as<std::string>();
  const auto entries = read_options_file(path);
  const auto options = configurable_options(cmd);

  AppliedConfig result;
  result.file = path;
  std::vector<std::string> overridden;
  for (const auto& entry : entries) {
    const auto found = options.find(entry.key);
    if (found == options.end())
      throw InvalidArgument(
          "config", cat(path, ": \"", entry.key, "\""),
          cat("the long options of tvie ", cmd->get_name(), " without their dashes: ", keys_text(options)));
    CLI::Option* option = found->second;
    const std::string where = cat(path, ": \"", entry.key, "\": ", entry.json);
    const bool flag = option->get_expected_min() == 0;
    if (flag && !entry.boolean)
      throw InvalidArgument("config", where, cat("true or false (--", entry.key, " is a flag)"));
    if (!flag && entry.boolean)
      throw InvalidArgument("config", where, cat("a value for --", entry.key, " (not a flag)"));
    if (option->count() > 0) {  // given on the command line: it wins
      overridden.push_back(entry.key);
      continue;
    }
    const std::string value = flag ? option->get_flag_value(entry.key, entry.text) : entry.text;
    try {
      option->add_result(value);
      option->run_callback();  // CLI11's own conversion and checks, as for the command line
    } catch (const CLI::ParseError& e) {
      throw InvalidArgument("config", where, cat("a value --", entry.key, " takes (", e.what(), ")"));
    }
    result.set.emplace_back(entry.key, value);
  }
  // Sorted by key, as read_options_file returns them; the report lists them so.
  std::string set_text, overridden_text;
  for (const auto& [key, value] : result.set) set_text += (set_text.empty() ? "" : ", ") + key + "=" + value;
  for (const auto& key : overridden) overridden_text += (overridden_text.empty() ? "" : ", ") + key;
  result.message = cat("options from ", path, ": ", set_text.empty() ? "none" : set_text,
                       overridden.empty() ? "" : " (the command line's " + overridden_text + " won over the file)");
  applied() = std::move(result);
}

bool set_by_config(const std::string& flag) {
  const auto& set = applied().set;
  return std::any_of(set.begin(), set.end(), [&](const auto& option) { return "--" + option.first == flag; });
}

const std::string& config_file_path() { return applied().file; }

RunOptions run_options(const std::string& device, const std::vector<std::string>& argv) {
  if (!applied().message.empty()) log::debug(std::exchange(applied().message, std::string()));
  RunOptions options;
  options.device = device;
  options.argv = argv;
  options.config_file = applied().file;
  options.config = applied().set;
  return options;
}

}  // namespace tvie::cli
