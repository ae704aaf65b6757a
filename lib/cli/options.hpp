// What the subcommands share: option groups, the record of which flag sets which settings field, the
// outputs (console, --json, --csv) and the start of a rank. A subcommand is parse -> run -> emit: it fills
// settings structs from its options, calls one runner of tvie/run.hpp and hands the report to emit().
#pragma once

#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include <tvie/dist.hpp>
#include <tvie/log.hpp>
#include <tvie/max_batch.hpp>
#include <tvie/report.hpp>
#include <tvie/run.hpp>
#include <tvie/settings.hpp>

namespace tvie::cli {

// --- which flag sets which settings field -------------------------------------------------------------
// Recorded when an option is registered, per subcommand, so that an InvalidArgument naming a field
// ("train.batch_size") is reported under the flag the user typed ("--batch").

// Records that `label` (a flag, or e.g. "RANK (environment)") sets `field` in subcommand `cmd`.
void record_field(const CLI::App* cmd, const std::string& field, const std::string& label);
// The flag recorded for `field` in `cmd`; the field itself when none was.
std::string option_for_field(const CLI::App* cmd, const std::string& field);

// Refuses inf, nan and numbers past a double's range ("1e400") before any settings see them.
const CLI::Validator& finite_number();
// Refuses what is not a whole number in [lowest, highest] ("1.5", "99999999999999999999"; CLI11's own conversion
// would clamp the latter to the type's largest value, or fail without saying what is accepted). A whole number in
// scientific notation ("1e9") is accepted and handed on in digits: the option takes it as a transform.
CLI::Validator whole_number(long long lowest, unsigned long long highest);
// Refuses an empty path ("--json ''" would otherwise ask for no file and write none).
const CLI::Validator& non_empty_path();

// add_option / add_flag that also record the settings field the option sets. A floating-point option takes finite
// numbers only, an integer one whole numbers its type holds.
template <typename T>
CLI::Option* add_field_option(CLI::App* cmd, const std::string& flags, T& value, const std::string& help,
                              const std::string& field) {
  auto* option = cmd->add_option(flags, value, help);
  if constexpr (std::is_floating_point_v<T>) option->check(finite_number());
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    option->transform(whole_number(std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  record_field(cmd, field, option->get_name());
  return option;
}
CLI::Option* add_field_flag(CLI::App* cmd, const std::string& flags, bool& value, const std::string& help,
                            const std::string& field);

// --- option groups ------------------------------------------------------------------------------------

// --model --preset --device (the zoo model and where it runs).
struct ModelOptions {
  std::string model = "gpt", preset = "tiny", device = "auto";
  int64_t seq = 0;        // tokens per sample of gpt, bert, llama (0: the preset's)
  int64_t pad_vocab = 0;  // the vocabulary padded up to a multiple of this (0: as published)
};
// `fixed_model`: the command runs only this model, so there is no --model; `model_help`: --model's help where the
// command takes fewer models than the zoo's (decode: gpt, llama).
void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& preset_help = "Size preset",
                       const std::string& fixed_model = "", const std::string& model_help = "");

// --json [--csv] --html --verbose --quiet, and --config (below).
struct OutputOptions {
  std::string json_path, csv_path, html_path, trace_path;
  bool verbose = false, quiet = false;
  // What else the command reads, as (its option, path), and writes, as (settings field, path): an output may be
  // neither an input nor another output (check_outputs). The --config file counts as an input of every command.
  std::vector<std::pair<std::string, std::string>> inputs, more_outputs;
};
void add_output_options(CLI::App* cmd, OutputOptions& o, bool with_csv = true,
                        const std::string& json_help = "Also write the report as JSON to this file (atomically)");
// The log level the flags ask for.
void apply_log_level(const OutputOptions& o);
// Every output path can be written (checked before anything runs; creates nothing), and none is an input of the
// command or another of its outputs (the same file by another name included): InvalidArgument naming the option.
void check_outputs(const OutputOptions& o);

// Every training option (--batch --accumulate --steps --warmup --optimizer --lr ... --seed).
struct TrainOptions {
  TrainSettings settings;
  std::string optimizer = "adamw", precision = "fp32", checkpoint = "none";
  std::string lr_schedule = "auto";  // auto: warmup-cosine, constant with --cuda-graph
  bool force = false;                // --force: no check of the predicted peak against the free memory
  bool allow_non_finite_loss = false;
};
void add_train_options(CLI::App* cmd, TrainOptions& o);
// --force: run even when the predicted peak exceeds the device's free memory (check_free_memory off).
void add_force_flag(CLI::App* cmd, bool& force);
// The exit code of a command whose training diverged (a loss became inf or NaN), after its report is written;
// --allow-non-finite-loss makes it 0.
constexpr int kDivergedExit = 3;
int training_exit_code(const TrainingResult& training, const TrainOptions& o);
// The settings, with the string-valued options parsed.
TrainSettings train_settings(const TrainOptions& o);

// Data parallelism's options (--backend --bucket-mb --overlap --timeout-s); the overlap flag only where
// there is a backward to overlap with.
struct DistOptions {
  std::string backend = "auto";
  DistSettings settings;
};
void add_dist_options(CLI::App* cmd, DistOptions& o, bool with_overlap);
DistSettings dist_settings(const DistOptions& o);

// --find-max-batch [--max-batch-up-to N] [--cpu-memory-limit-mb MB] (train, infer, compare): the search for
// the largest batch that fits instead of the command's run. `with_cpu_limit`: register --cpu-memory-limit-mb
// (infer has its own, shared with its sweep: `cpu_limit_field` names the field it sets there).
struct MaxBatchOptions {
  bool find = false;
  MaxBatchSettings settings;
};
void add_max_batch_options(CLI::App* cmd, MaxBatchOptions& o, bool with_cpu_limit);
// The search's own options without --find-max-batch would be ignored: InvalidArgument naming the option
// (--cpu-memory-limit-mb where `with_cpu_limit`, --max-batch-up-to).
void refuse_search_options_without_search(const MaxBatchOptions& o, bool with_cpu_limit);

// --slice-layers K1,K2 [--slice-vocab V1,V2] (train, infer, compare): the model emulated by slices at its real width.
struct SliceOptions {
  std::string layers;  // "K1,K2"; empty: not asked
  std::string vocab;   // "V1,V2"; empty: the real vocabulary in every slice
};
void add_slice_options(CLI::App* cmd, SliceOptions& o);
// The block counts and vocabulary sizes (two integers each, else InvalidArgument("slices.layers" / "slices.vocab",
// ...)); nullopt when --slice-layers is not given (--slice-vocab alone: InvalidArgument("slices.vocab", ...)).
std::optional<SliceSettings> slice_settings(const SliceOptions& o);
// --slice-layers and --find-max-batch ask for two different runs: InvalidArgument("slices.layers", ...).
void refuse_slices_with_max_batch(const SliceOptions& slices, const MaxBatchOptions& max_batch);
// --profile-classes asks for one profiled run; slices are several: InvalidArgument(field, "on", ...).
void refuse_profile_with_slices(bool profile_classes, const char* field);
// --slice-layers makes several tables (slices, extrapolation, prediction): no one CSV; InvalidArgument("csv", ...);
// and no timed steps of one model to trace: InvalidArgument("trace", ...).
void refuse_csv_with_slices(const OutputOptions& output);
// --trace PATH (compare, train, infer): the timed steps and batches as Chrome trace events.
void add_trace_option(CLI::App* cmd, OutputOptions& o);
// --find-max-batch times nothing: InvalidArgument("trace", ...).
void refuse_trace_with_max_batch(const OutputOptions& output);
// The slices of the zoo model of `m` (zoo_slices).
SliceSource slice_source(const ModelOptions& m, const SliceSettings& settings);

// --- --config FILE.json (lib/cli/config_file.cpp) -------------------------------------------------------
// A command's options from a JSON object: each key a long option without its dashes, each value what the command
// line would give it (a flag true or false; an array joined by commas: "batch": [1, 2, 4] is --batch 1,2,4). The
// command line wins over the file. Registered on every command that runs or projects.
void add_config_option(CLI::App* cmd);
// After parsing, before the command runs: the file's values given to the options the command line did not give,
// through CLI11's own conversion and checks. InvalidArgument("config", ...) for a file that cannot be read, is not
// JSON or not an object, a key that is no long option of `cmd`, or a value of the wrong kind or that the option
// refuses. Nothing runs and nothing is written before it returns.
void apply_config_file(CLI::App* cmd);
// Whether the file set `flag` ("--batch"), and the file's path ("" when none was given).
bool set_by_config(const std::string& flag);
const std::string& config_file_path();
// The RunOptions of a command's run: device, the command line, and what --config set (the report's context).
RunOptions run_options(const std::string& device, const std::vector<std::string>& argv);

// --- the rest -----------------------------------------------------------------------------------------

// The zoo workload the model options name (InvalidArgument("model"/"preset") otherwise).
std::unique_ptr<Workload> zoo_workload(const ModelOptions& o);

// An AOTInductor package as the command's model (infer, serve): --aoti PATH, and the inputs' --input-shape and
// --vocab (registered here unless the command shares them with --torchscript).
struct AotiOptions {
  std::string path, input_shape;
  int64_t vocab = 0;
};
void add_aoti_options(CLI::App* cmd, AotiOptions& o, bool with_input_options);
// The package's workload, refusing zoo options it would ignore, dtypes and devices other than those it was compiled
// for (`dtype_field`, `dtype_text`: the command's), and batch sizes outside its range (`batch_field`). Sets
// model.device to the package's when it is "auto".
std::unique_ptr<Workload> aoti_workload(const AotiOptions& o, ModelOptions& model,
                                        const std::vector<InferenceDtype>& dtypes, const std::string& dtype_field,
                                        const std::string& dtype_text, const std::vector<int64_t>& batch_sizes,
                                        const std::string& batch_field);

// One rank of a distributed command: records the environment's fields for error messages (at
// registration) and, at start, reads the job; ranks other than 0 log only errors.
void record_rank_fields(const CLI::App* cmd);
DistEnv start_rank();

// Console, then the files asked for. Only the reporting rank (0) writes.
template <typename Report>
void emit(const Report& report, const OutputOptions& o) {
  ConsoleReporter(std::cout).report(report);
  if (!o.json_path.empty()) {
    JsonReporter(o.json_path).report(report);
    log::info(cat("wrote ", o.json_path));
  }
  if (!o.csv_path.empty()) {
    CsvReporter(o.csv_path).report(report);
    log::info(cat("wrote ", o.csv_path));
  }
  if (!o.html_path.empty()) {
    HtmlReporter(o.html_path).report(report);
    log::info(cat("wrote ", o.html_path));
  }
  if (!o.trace_path.empty()) {
    TraceReporter(o.trace_path).report(report);
    log::info(cat("wrote ", o.trace_path));
  }
}

// "1,2,4,...,256": comma-separated integers; "..." continues the series by the ratio of the two numbers
// before it (doubling here) up to the number after it. Throws InvalidArgument(field, text, ...).
std::vector<int64_t> parse_int_series(const std::string& text, const std::string& field);

}  // namespace tvie::cli
