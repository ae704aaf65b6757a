// `tvie compare` and `tvie list`.
#include <iostream>
#include <map>

#include <tvie/tvie.hpp>

#include "commands.hpp"

namespace tvie::cli {
namespace {

void add_logging_flags(CLI::App* cmd, bool* verbose, bool* quiet) {
  cmd->add_flag("-v,--verbose", *verbose, "Log debug messages");
  cmd->add_flag("-q,--quiet", *quiet, "Log only errors");
}

void apply_logging(bool verbose, bool quiet) {
  if (verbose) log::set_level(log::Level::debug);
  if (quiet) log::set_level(log::Level::error);
}

struct CompareOptions {
  CompareSettings settings;
  std::string optimizer = "adamw";
  std::string infer_dtype = "fp32";
  int64_t infer_batch = 0;  // 0: same as --batch
  int64_t infer_steps = 0;  // 0: same as --steps
  std::string json_path;
  bool verbose = false, quiet = false;
};

}  // namespace

std::string option_for_field(const std::string& field) {
  static const std::map<std::string, std::string> options = {
      {"model", "--model"},
      {"preset", "--preset"},
      {"device", "--device"},
      {"json", "--json"},
      {"train.batch_size", "--batch"},
      {"train.steps", "--steps"},
      {"train.warmup_steps", "--warmup"},
      {"train.accumulate", "--accumulate"},
      {"train.optimizer", "--optimizer"},
      {"train.learning_rate", "--lr"},
      {"train.momentum", "--momentum"},
      {"train.weight_decay", "--weight-decay"},
      {"infer.batch_size", "--infer-batch"},
      {"infer.steps", "--infer-steps"},
      {"infer.warmup_steps", "--warmup"},
      {"infer.dtype", "--infer-dtype"},
  };
  const auto it = options.find(field);
  return it == options.end() ? field : it->second;
}

Runner add_compare_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare",
                                 "Train the model, then run inference on a copy of its weights, and print "
                                 "memory, time and throughput side by side");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: last wins
  auto& s = o->settings;
  cmd->add_option("--model", s.model, "Zoo model: mlp, cnn, gpt")->capture_default_str();
  cmd->add_option("--preset", s.preset, "Size preset: tiny, small, and per model large / resnet18-cifar / gpt2-small")
      ->capture_default_str();
  cmd->add_option("--device", s.device, "auto (CUDA if available, else CPU), cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--batch", s.train.batch_size, "Training samples per optimizer step")->capture_default_str();
  cmd->add_option("--accumulate", s.train.accumulate, "Micro-batches per optimizer step (gradient accumulation)")
      ->capture_default_str();
  cmd->add_option("--steps", s.train.steps, "Timed training steps (and inference batches unless --infer-steps)")
      ->capture_default_str();
  cmd->add_option("--warmup", s.train.warmup_steps,
                  "Untimed warm-up steps/batches before the timed ones (after the "
                  "one instrumented ledger step)")
      ->capture_default_str();
  cmd->add_option("--optimizer", o->optimizer, "sgd, sgd-momentum, adam, adamw")->capture_default_str();
  cmd->add_option("--lr", s.train.learning_rate, "Learning rate")->capture_default_str();
  cmd->add_option("--momentum", s.train.momentum, "Momentum of sgd-momentum")->capture_default_str();
  cmd->add_option("--weight-decay", s.train.weight_decay, "Decoupled weight decay of adamw")->capture_default_str();
  cmd->add_option("--seed", s.train.seed, "Seed of the initial weights and the synthetic data")->capture_default_str();
  cmd->add_option("--infer-dtype", o->infer_dtype, "Weights of the inference copy: fp32, fp16 (CUDA), bf16")
      ->capture_default_str();
  cmd->add_option("--infer-batch", o->infer_batch, "Inference samples per batch (default: same as --batch)")
      ->capture_default_str();
  cmd->add_option("--infer-steps", o->infer_steps, "Timed inference batches (default: same as --steps)")
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Also write the report as JSON to this file (atomically)");
  add_logging_flags(cmd, &o->verbose, &o->quiet);

  return [o, cmd, argv]() {
    apply_logging(o->verbose, o->quiet);
    auto& s = o->settings;
    s.train.optimizer = parse_optimizer(o->optimizer);
    s.infer.dtype = parse_inference_dtype(o->infer_dtype);
    s.infer.batch_size = cmd->count("--infer-batch") > 0 ? o->infer_batch : s.train.batch_size;
    s.infer.steps = cmd->count("--infer-steps") > 0 ? o->infer_steps : s.train.steps;
    s.infer.warmup_steps = s.train.warmup_steps;
    s.infer.seed = s.train.seed;
    validate(s);  // everything is checked before anything runs or any file is touched
    if (!o->json_path.empty()) check_output_path(o->json_path, "json");

    const CompareReport report = run_compare(s, argv);
    ConsoleReporter(std::cout).report(report);
    if (!o->json_path.empty()) {
      JsonReporter(o->json_path).report(report);
      log::info(cat("wrote ", o->json_path));
    }
    return 0;
  };
}

Runner add_info_command(CLI::App& app) {
  app.add_subcommand("info", "Print versions and the devices LibTorch sees");
  return [] {
    std::cout << "tvie_version: " << TVIE_VERSION_STRING << "\n"
              << "torch_version: " << make_run_context(c10::Device(c10::kCPU), {}).torch_version << "\n"
              << "built_with_cuda: " << (TVIE_WITH_CUDA ? "yes" : "no") << "\n"
              << "cuda_available: " << (cuda_available() ? "yes" : "no") << "\n"
              << "cuda_devices: " << cuda_device_count() << "\n";
    for (int i = 0; i < cuda_device_count(); ++i)
      std::cout << "  " << describe_device(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))) << "\n";
    return 0;
  };
}

Runner add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List the zoo's models and their presets with analytic sizes");
  return [] {
    for (const auto& model : model_names()) {
      for (const auto& preset : preset_names(model)) {
        const auto facts = make_zoo_workload(model, preset)->facts();
        std::cout << model << " --preset " << preset << ": " << facts.parameter_count << " parameters, "
                  << facts.forward_flops_per_sample << " forward FLOPs per sample\n";
      }
    }
    return 0;
  };
}

}  // namespace tvie::cli
