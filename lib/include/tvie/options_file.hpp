// A file of options (tvie's `--config FILE.json`): one JSON object, each key an option's long name without its
// dashes, each value what the command line would give that option. Read and checked once, at the boundary; which
// keys a command takes is the command's to say (lib/cli/config_file.cpp).
#pragma once

#include <string>
#include <vector>

namespace tvie {

struct OptionsFileEntry {
  std::string key;       // "batch", "infer-dtype", "quiet"
  bool boolean = false;  // the file gave true or false (a flag's value); else a string, a number or an array
  std::string text;      // as the command line would spell it: "8", "int8", "1,2,4" (an array joined by commas),
                         // "true" / "false"
  std::string json;      // the value as the file wrote it, for messages: "[1,2,4]"
};

// The entries sorted by key (a JSON object's keys have no order). Throws
// InvalidArgument("config", ...) naming the file (and the key) for a file that cannot be read, text that is not
// JSON (with nlohmann's line and column), a document that is not an object, or a value that is null, an object,
// an empty array or an array holding anything but strings and numbers.
// Directories, files over 1 MiB and values nested deeper than 16 are refused the same way.
std::vector<OptionsFileEntry> read_options_file(const std::string& path);
// The same checks on text already read (`path` names it in messages): what read_options_file parses, and what the
// fuzz target (tests/fuzz/config_fuzz.cpp) feeds.
std::vector<OptionsFileEntry> parse_options_file(const std::string& text, const std::string& path);

}  // namespace tvie
