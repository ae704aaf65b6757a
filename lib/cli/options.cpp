#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <tvie/aoti.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/run.hpp>

namespace tvie::cli {
namespace {

std::map<const CLI::App*, std::map<std::string, std::string>>& field_table() {
  static std::map<const CLI::App*, std::map<std::string, std::string>> table;
  return table;
}

}  // namespace

const CLI::Validator& finite_number() {
  static const CLI::Validator finite(
      [](std::string& text) -> std::string {
        // strtod gives inf for "inf" and for a number past the range ("1e400").
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = end != text.c_str() && *end == '\0';
        return number && std::isfinite(v) ? "" : "got '" + text + "'; accepted: a finite number";
      },
      "", "finite");
  return finite;
}

CLI::Validator whole_number(long long lowest, unsigned long long highest) {
  return CLI::Validator(
      [lowest, highest](std::string& text) -> std::string {
        const std::string accepted =
            lowest == 0 ? cat("a whole number from 0 to ", highest) : cat("a whole number, at most ", highest);
        const char* begin = text.c_str();
        const char* end = begin + text.size();
        bool in_range = false;
        if (!text.empty() && text[0] == '-') {
          long long v = 0;
          const auto [p, ec] = std::from_chars(begin, end, v);
          in_range = ec == std::errc() && p == end && v >= lowest;
        } else {
          unsigned long long v = 0;
          const auto [p, ec] = std::from_chars(begin, end, v);
          in_range = ec == std::errc() && p == end && v <= highest;
        }
        if (!in_range && text.find_first_of("eE") != std::string::npos) {
          // A whole number in scientific notation, as budgets are typed ("1e9", "2.5e6"): taken where a double
          // holds it exactly (up to 2^53), and handed on in digits.
          double v = 0;
          const auto [p, ec] = std::from_chars(begin, end, v);
          constexpr double kExact = 9007199254740992.0;
          if (ec == std::errc() && p == end && std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= kExact &&
              v >= static_cast<double>(lowest) && v <= static_cast<double>(highest)) {
            text = std::to_string(static_cast<long long>(v));
            in_range = true;
          }
        }
        return in_range ? "" : "got '" + text + "'; accepted: " + accepted;
      },
      "", "whole");
}

const CLI::Validator& non_empty_path() {
  static const CLI::Validator path(
      [](std::string& text) -> std::string { return text.empty() ? "got ''; accepted: a file path" : ""; }, "", "path");
  return path;
}

void record_field(const CLI::App* cmd, const std::string& field, const std::string& label) {
  field_table()[cmd][field] = label;
}

std::string option_for_field(const CLI::App* cmd, const std::string& field) {
  const auto& table = field_table();
  const auto command = table.find(cmd);
  if (command == table.end()) return field;
  const auto it = command->second.find(field);
  if (it == command->second.end()) return field;
  return set_by_config(it->second) ? it->second + " (from " + config_file_path() + ")" : it->second;
}

CLI::Option* add_field_flag(CLI::App* cmd, const std::string& flags, bool& value, const std::string& help,
                            const std::string& field) {
  auto* option = cmd->add_flag(flags, value, help);
  record_field(cmd, field, option->get_name());
  return option;
}

void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& preset_help, const std::string& fixed_model,
                       const std::string& model_help) {
  if (fixed_model.empty())
    add_field_option(
        cmd, "--model", o.model,
        model_help.empty() ? "Zoo model: mlp, cnn, gpt, resnet, bert, llama (tvie list shows the presets)" : model_help,
        "model")
        ->capture_default_str();
  else
    o.model = fixed_model;
  add_field_option(cmd, "--preset", o.preset, preset_help, "preset")->capture_default_str();
  add_field_option(cmd, "--seq", o.seq, "Tokens per sample of gpt, bert, llama (0: the preset's)", "model.seq")
      ->capture_default_str();
  add_field_option(cmd, "--pad-vocab", o.pad_vocab,
                   "Pad the vocabulary of gpt, bert, llama up to a multiple of N, as nanoGPT and llm.c do (64: GPT-2's "
                   "50,257 -> 50,304; 0: as published)",
                   "model.pad_vocab")
      ->capture_default_str();
  add_field_option(cmd, "--device", o.device, "auto (CUDA if available, else CPU), cpu, cuda, cuda:N", "device")
      ->capture_default_str();
}

void add_output_options(CLI::App* cmd, OutputOptions& o, bool with_csv, const std::string& json_help) {
  add_field_option(cmd, "--json", o.json_path, json_help, "json")->check(non_empty_path());
  if (with_csv)
    add_field_option(cmd, "--csv", o.csv_path,
                     "Write the report's table as CSV here (atomically; one header row, units in the column names)",
                     "csv")
        ->check(non_empty_path());
  add_field_option(cmd, "--html", o.html_path,
                   "Write the report as one self-contained HTML page with SVG charts here (atomically; no network)",
                   "html")
      ->check(non_empty_path());
  cmd->add_flag("-v,--verbose", o.verbose, "Log debug messages");
  cmd->add_flag("-q,--quiet", o.quiet, "Log only errors");
  add_config_option(cmd);
}

void apply_log_level(const OutputOptions& o) {
  if (o.verbose) log::set_level(log::Level::debug);
  if (o.quiet) log::set_level(log::Level::error);
}

namespace {
// Whether two paths name the same file: the same absolute path once symbolic links and dot segments are resolved,
// or (both existing) the same inode.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  const auto resolved = [](const std::string& p) {
    std::error_code e;
    const auto r = fs::weakly_canonical(fs::absolute(p, e), e);
    return e ? fs::absolute(p, e).lexically_normal() : r;
  };
  return resolved(a) == resolved(b);
}
}  // namespace

void check_outputs(const OutputOptions& o) {
  std::vector<std::pair<std::string, std::string>> outputs = {
      {"json", o.json_path}, {"csv", o.csv_path}, {"html", o.html_path}, {"trace", o.trace_path}};
  outputs.insert(outputs.end(), o.more_outputs.begin(), o.more_outputs.end());
  std::vector<std::pair<std::string, std::string>> inputs = o.inputs;
  if (!config_file_path().empty()) inputs.emplace_back("--config", config_file_path());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [field, path] = outputs[i];
    if (path.empty()) continue;
    check_output_path(path, field);
    for (const auto& [input_field, input] : inputs)
      if (!input.empty() && same_file(path, input))
        throw InvalidArgument(field, path,
                              "a file other than the command's input (it is the " + input_field +
                                  " file, which the output would overwrite)");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same_file(path, outputs[j].second))
        throw InvalidArgument(field, path, "a file of its own (the " + outputs[j].first + " output is written there)");
  }
}

void add_train_options(CLI::App* cmd, TrainOptions& o) {
  auto& s = o.settings;
  add_field_option(cmd, "--batch", s.batch_size, "Training samples per optimizer step", "train.batch_size")
      ->capture_default_str();
  add_field_option(cmd, "--accumulate", s.accumulate, "Micro-batches per optimizer step (gradient accumulation)",
                   "train.accumulate")
      ->capture_default_str();
  add_field_option(cmd, "--steps", s.steps, "Timed training steps", "train.steps")->capture_default_str();
  add_field_option(cmd, "--warmup", s.warmup_steps,
                   "Untimed warm-up steps before the timed ones (after the instrumented ledger steps)",
                   "train.warmup_steps")
      ->capture_default_str();
  add_field_option(cmd, "--optimizer", o.optimizer, "sgd, sgd-momentum, adam, adamw", "train.optimizer")
      ->capture_default_str();
  add_field_flag(cmd, "--fused-optimizer", s.fused_optimizer,
                 "adam, adamw: LibTorch's fused step (at::_fused_adamw_, as torch.optim.AdamW(fused=True))",
                 "train.fused_optimizer");
  add_field_flag(cmd, "--tf32", s.tf32,
                 "fp32 on CUDA: the matrix products on the tensor cores' TF32 mode (torch.backends.cuda.matmul."
                 "allow_tf32)",
                 "train.tf32");
  add_field_flag(cmd, "--fused-loss", s.fused_loss,
                 "The cross-entropy without an fp32 copy of the logits: their gradient computed in the forward, in "
                 "chunks, and kept in their dtype (tvie::fused_cross_entropy; the zoo's models)",
                 "train.fused_loss");
  add_field_option(cmd, "--lr", s.learning_rate, "Learning rate (the peak of the schedule)", "train.learning_rate")
      ->capture_default_str();
  add_field_option(cmd, "--lr-schedule", o.lr_schedule,
                   "auto (warmup-cosine; constant with --cuda-graph), warmup-cosine (linear warm-up, cosine decay to "
                   "lr/10 at the last step), constant",
                   "train.lr_schedule")
      ->capture_default_str();
  add_field_option(cmd, "--lr-warmup", s.lr_warmup_steps,
                   "Warm-up steps of warmup-cosine (0: a tenth of the run's optimizer steps)", "train.lr_warmup_steps")
      ->capture_default_str();
  add_field_option(cmd, "--momentum", s.momentum, "Momentum of sgd-momentum", "train.momentum")->capture_default_str();
  add_field_option(cmd, "--weight-decay", s.weight_decay, "Decoupled weight decay of adamw", "train.weight_decay")
      ->capture_default_str();
  add_field_option(cmd, "--precision", o.precision,
                   "fp32, amp-bf16 (autocast), amp-fp16 (autocast + loss scaling, CUDA), bf16 (pure bf16 weights)",
                   "train.precision")
      ->capture_default_str();
  add_field_option(cmd, "--clip", s.clip_grad_norm, "Clip the gradients' global L2 norm to this (0: off)",
                   "train.clip_grad_norm")
      ->capture_default_str();
  add_field_option(cmd, "--checkpoint", o.checkpoint,
                   "Activation checkpointing of transformer blocks: none, blocks, every-K", "train.checkpoint_every")
      ->capture_default_str();
  add_field_flag(cmd, "--cuda-graph", s.cuda_graph, "Capture the training step in a CUDA graph and replay it (CUDA)",
                 "train.cuda_graph");
  add_field_flag(cmd, "--profile-classes", s.profile_classes,
                 "One more training step (compare: and inference batch) under LibTorch's profiler: time by operator "
                 "class, which plan --from calibrates class by class",
                 "train.profile_classes");
  add_field_option(cmd, "--data-batches", s.data_batches, "Distinct synthetic batches cycled through",
                   "train.data_batches")
      ->capture_default_str();
  add_field_option(cmd, "--loss-every", s.loss_every, "Loss-curve point every N steps (0: about ten points)",
                   "train.loss_every")
      ->capture_default_str();
  add_field_option(cmd, "--seed", s.seed, "Seed of the initial weights and the synthetic data", "train.seed")
      ->capture_default_str();
  add_force_flag(cmd, o.force);
  add_field_flag(cmd, "--allow-non-finite-loss", o.allow_non_finite_loss,
                 "Exit 0 when the loss becomes inf or NaN (the report says from which step); without it such a run "
                 "writes its report and exits 3",
                 "allow_non_finite_loss");
}

void add_force_flag(CLI::App* cmd, bool& force) {
  add_field_flag(cmd, "--force", force,
                 "Run even when the predicted peak exceeds the device's free memory (CUDA: cudaMemGetInfo; CPU: "
                 "MemAvailable); without it such a run is refused before anything is built",
                 "check_free_memory");
}

int training_exit_code(const TrainingResult& training, const TrainOptions& o) {
  return training.non_finite_losses > 0 && !o.allow_non_finite_loss ? kDivergedExit : 0;
}

TrainSettings train_settings(const TrainOptions& o) {
  TrainSettings t = o.settings;
  t.check_free_memory = !o.force;
  t.optimizer = parse_optimizer(o.optimizer);
  t.precision = parse_train_precision(o.precision);
  t.checkpoint_every = parse_checkpoint(o.checkpoint);
  t.lr_schedule = o.lr_schedule == "auto" ? (t.cuda_graph ? LrSchedule::constant : LrSchedule::warmup_cosine)
                                          : parse_lr_schedule(o.lr_schedule);
  return t;
}

void add_dist_options(CLI::App* cmd, DistOptions& o, bool with_overlap) {
  add_field_option(cmd, "--backend", o.backend,
                   with_overlap ? "Data parallelism: auto (nccl for CUDA, gloo for CPU), nccl, gloo; on by itself "
                                  "when WORLD_SIZE > 1"
                                : "auto (nccl for CUDA, gloo for CPU), nccl, gloo",
                   "dist.backend")
      ->capture_default_str();
  if (with_overlap) {
    add_field_option(cmd, "--bucket-mb", o.settings.bucket_mb, "Data parallelism: gradient bucket size in MiB",
                     "dist.bucket_mb")
        ->capture_default_str();
    add_field_flag(cmd, "--overlap", o.settings.overlap,
                   "Data parallelism: all-reduce each bucket while backward goes on", "dist.overlap");
  }
  add_field_option(cmd, "--timeout-s", o.settings.timeout_s, "Rendezvous and collective timeout", "dist.timeout_s")
      ->capture_default_str();
  record_rank_fields(cmd);
}

DistSettings dist_settings(const DistOptions& o) {
  DistSettings d = o.settings;
  d.backend = parse_dist_backend(o.backend);
  return d;
}

std::unique_ptr<Workload> zoo_workload(const ModelOptions& o) {
  ModelShape shape;
  shape.seq_tokens = o.seq;
  shape.vocab_multiple = o.pad_vocab;
  return make_zoo_workload(o.model, o.preset, shape);
}

void add_aoti_options(CLI::App* cmd, AotiOptions& o, bool with_input_options) {
  add_field_option(cmd, "--aoti", o.path,
                   "Run this AOTInductor package (.pt2 of torch._inductor.aoti_compile_and_package) instead of a zoo "
                   "model, in the device and dtype it was compiled for; needs --input-shape",
                   "aoti.path")
      ->check(non_empty_path());
  if (!with_input_options) return;
  add_field_option(cmd, "--input-shape", o.input_shape, "AOTInductor: one sample's input shape, e.g. 3,32,32",
                   "aoti.input_shape");
  add_field_option(cmd, "--vocab", o.vocab,
                   "AOTInductor: inputs are int64 token ids in [0, vocab) (0: fp32 N(0,1) inputs)", "aoti.vocab_size")
      ->capture_default_str();
}

std::unique_ptr<Workload> aoti_workload(const AotiOptions& o, ModelOptions& model,
                                        const std::vector<InferenceDtype>& dtypes, const std::string& dtype_field,
                                        const std::string& dtype_text, const std::vector<int64_t>& batch_sizes,
                                        const std::string& batch_field) {
  if (model.pad_vocab != 0)
    throw InvalidArgument("model.pad_vocab", cat(model.pad_vocab), "0 with --aoti (a zoo model's option)");
  if (o.vocab < 0)
    throw InvalidArgument("aoti.vocab_size", cat(o.vocab), "an integer >= 0 (0: fp32 inputs; V: token ids in [0, V))");
  AotiSettings as;
  as.path = o.path;
  as.input_shape = o.input_shape.empty() ? std::vector<int64_t>{} : parse_int_series(o.input_shape, "aoti.input_shape");
  as.token_input = o.vocab > 0;
  as.vocab_size = o.vocab;
  validate(as);
  // The package computes in the device and dtype it was compiled for: a run in others would be mislabelled.
  const AotiPackage package = aoti_package(as.path);
  for (const auto d : dtypes)
    if (d != package.dtype)
      throw InvalidArgument(dtype_field, dtype_text,
                            cat(to_string(package.dtype), " with this package (the dtype it was compiled in)"));
  if (model.device == "auto")
    model.device = package.device;
  else if (c10::Device(model.device).type() != c10::Device(package.device).type())
    throw InvalidArgument("device", model.device,
                          cat(package.device, " with this package (the device it was compiled for)"));
  auto workload = make_aoti_workload(as);
  check_aoti_batches(*workload, batch_sizes, batch_field);
  return workload;
}

void record_rank_fields(const CLI::App* cmd) {
  for (const char* variable : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "MASTER_ADDR"})
    record_field(cmd, cat("env.", variable), cat(variable, " (environment)"));
}

DistEnv start_rank() {
  const DistEnv env = rank_environment();
  if (env.rank != 0) log::set_level(log::Level::error);  // rank 0 prints; the others only report errors
  return env;
}

std::vector<int64_t> parse_int_series(const std::string& text, const std::string& field) {
  const std::string accepted =
      "comma-separated integers >= 1; '...' continues a doubling (or other constant-ratio) series, e.g. 1,2,4,...,256";
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos)
      throw InvalidArgument(field, text, accepted);
    const int64_t v = std::stoll(t);
    if (v < 1) throw InvalidArgument(field, text, accepted);
    return v;
  };
  std::vector<int64_t> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] != "...") {
      out.push_back(number(items[i]));
      continue;
    }
    // Needs two numbers before (the ratio) and one after (the end).
    if (out.size() < 2 || i + 1 >= items.size() || out[out.size() - 1] % out[out.size() - 2] != 0 ||
        out[out.size() - 1] == out[out.size() - 2])
      throw InvalidArgument(field, text, accepted);
    const int64_t ratio = out[out.size() - 1] / out[out.size() - 2];
    const int64_t end = number(items[i + 1]);
    // The series continues upward to its end: "1,2,4,...,3" has nothing to continue to.
    if (end <= out.back())
      throw InvalidArgument(field, text, accepted + " (the number after '...' above the one before it)");
    for (int64_t v = out.back() * ratio; v < end; v *= ratio) out.push_back(v);
  }
  if (out.empty()) throw InvalidArgument(field, text, accepted);
  return out;
}

void add_slice_options(CLI::App* cmd, SliceOptions& o) {
  add_field_option(cmd, "--slice-layers", o.layers,
                   "K1,K2: emulate the model by slices of K1 and K2 blocks at its real width (gpt, bert, llama; "
                   "resnet: blocks per stage); the full model is extrapolated, not run",
                   "slices.layers");
  add_field_option(cmd, "--slice-vocab", o.vocab,
                   "V1,V2: with --slice-layers, slice the vocabulary too (gpt, bert, llama): every slice has V1 "
                   "entries, one more has V2; embedding and head extrapolated linearly in the vocabulary",
                   "slices.vocab");
}

std::optional<SliceSettings> slice_settings(const SliceOptions& o) {
  if (o.layers.empty()) {
    if (!o.vocab.empty()) throw InvalidArgument("slices.vocab", o.vocab, "only with --slice-layers K1,K2");
    return std::nullopt;
  }
  const auto k = parse_int_series(o.layers, "slices.layers");
  if (k.size() != 2) throw InvalidArgument("slices.layers", o.layers, "two block counts K1,K2, e.g. 1,2");
  SliceSettings s{k[0], k[1]};
  if (!o.vocab.empty()) {
    const auto v = parse_int_series(o.vocab, "slices.vocab");
    if (v.size() != 2) throw InvalidArgument("slices.vocab", o.vocab, "two vocabulary sizes V1,V2, e.g. 16032,32064");
    s.vocab_1 = v[0];
    s.vocab_2 = v[1];
  }
  return s;
}

void refuse_slices_with_max_batch(const SliceOptions& slices, const MaxBatchOptions& max_batch) {
  if (max_batch.find)
    throw InvalidArgument("slices.layers", slices.layers, "not with --find-max-batch (one or the other)");
}

SliceSource slice_source(const ModelOptions& m, const SliceSettings& settings) {
  if (m.pad_vocab != 0)
    throw InvalidArgument("model.pad_vocab", cat(m.pad_vocab),
                          "0 with --slice-layers (the slices extrapolate to the preset's vocabulary)");
  return zoo_slices(m.model, m.preset, m.seq, settings);
}

void add_max_batch_options(CLI::App* cmd, MaxBatchOptions& o, bool with_cpu_limit) {
  add_field_flag(cmd, "--find-max-batch", o.find,
                 "Instead of the run: search the largest batch that fits (doubling, then bisection; one "
                 "instrumented step per probe), beside the predicted largest",
                 "max_batch.find");
  add_field_option(cmd, "--max-batch-up-to", o.settings.max_batch, "--find-max-batch: stop doubling here",
                   "max_batch.max_batch")
      ->capture_default_str();
  if (with_cpu_limit)
    add_field_option(cmd, "--cpu-memory-limit-mb", o.settings.cpu_memory_limit_mb,
                     "CPU: emulate a device with this much free memory for tensors (--find-max-batch needs it on "
                     "the CPU)",
                     "max_batch.cpu_memory_limit_mb")
        ->capture_default_str();
  else
    record_field(cmd, "max_batch.cpu_memory_limit_mb", "--cpu-memory-limit-mb");
}

void refuse_search_options_without_search(const MaxBatchOptions& o, bool with_cpu_limit) {
  if (o.find) return;
  const MaxBatchSettings defaults;
  if (with_cpu_limit && o.settings.cpu_memory_limit_mb != defaults.cpu_memory_limit_mb)
    throw InvalidArgument("max_batch.cpu_memory_limit_mb", cat(o.settings.cpu_memory_limit_mb),
                          "only with --find-max-batch (the limit emulates a device for the search; a run's predicted "
                          "peak is checked against the host's memory)");
  if (o.settings.max_batch != defaults.max_batch)
    throw InvalidArgument("max_batch.max_batch", cat(o.settings.max_batch), "only with --find-max-batch");
}

void refuse_profile_with_slices(bool profile_classes, const char* field) {
  if (profile_classes)
    throw InvalidArgument(field, "on",
                          "off with --slice-layers (each slice is a run of its own; profile the model whole, or a "
                          "cut of it with plan --measure-layers)");
}

void refuse_csv_with_slices(const OutputOptions& output) {
  if (!output.csv_path.empty())
    throw InvalidArgument("csv", output.csv_path,
                          "no CSV with --slice-layers (slices, extrapolation and prediction are several tables: "
                          "use --json)");
  if (!output.trace_path.empty())
    throw InvalidArgument("trace", output.trace_path,
                          "a run of one model (with --slice-layers each slice is a run of its own; use --json)");
}

void add_trace_option(CLI::App* cmd, OutputOptions& o) {
  add_field_option(cmd, "--trace", o.trace_path,
                   "Write the timed steps' phases and the inference batches as a Chrome trace (Perfetto, "
                   "chrome://tracing) here (atomically)",
                   "trace")
      ->check(non_empty_path());
}

void refuse_trace_with_max_batch(const OutputOptions& output) {
  if (!output.trace_path.empty())
    throw InvalidArgument("trace", output.trace_path, "a timed run (--find-max-batch's probes are not timed)");
}

}  // namespace tvie::cli
