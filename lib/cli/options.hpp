// Options shared by the subcommands: the model and device, the training settings, logging and --json.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <tvie/settings.hpp>

namespace tvie::cli {

struct CommonOptions {
  CompareSettings settings;
  std::string optimizer = "adamw";
  std::string precision = "fp32";
  std::string checkpoint = "none";
  std::string json_path;
  bool verbose = false, quiet = false;
};

// --model --preset --device --seed --json --verbose --quiet and every training option; a repeated
// option takes its last value.
void add_common_options(CLI::App* cmd, CommonOptions& o);
// Parses the string-valued options into o.settings.train and applies the log level.
void apply_common_options(CommonOptions& o);

// Checks a zoo model, preset, device and inference dtype as `tvie compare` does; a dtype error names
// `dtype_field` (the calling command's own option) instead of compare's infer.dtype.
void validate_model(const std::string& model, const std::string& preset, const std::string& device,
                    InferenceDtype dtype, const std::string& dtype_field);

// "1,2,4,...,256": comma-separated integers; "..." continues the series by the ratio of the two numbers
// before it (doubling here) up to the number after it. Throws InvalidArgument(field, text, ...).
std::vector<int64_t> parse_int_series(const std::string& text, const std::string& field);

// The command-line option that sets a library settings field ("train.batch_size" -> "--batch").
std::string option_for_field(const std::string& field);

}  // namespace tvie::cli
