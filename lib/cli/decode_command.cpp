// `tvie decode`: KV-cached decoding of the zoo gpt.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct DecodeOptions {
  std::string preset = "tiny", device = "auto", dtype = "fp32", json_path;
  DecodeSettings settings;
  bool quiet = false;
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

Runner add_decode_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<DecodeOptions>();
  auto* cmd = app.add_subcommand("decode",
                                 "Generate with a KV cache (gpt): time to first token, time per output "
                                 "token, tokens/s and the KV-cache bytes");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->settings;
  cmd->add_option("--preset", o->preset, "gpt preset: tiny, small, gpt2-small")->capture_default_str();
  cmd->add_option("--device", o->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--batch", s.batch_size, "Sequences decoded together")->capture_default_str();
  cmd->add_option("--prompt", s.prompt_tokens, "Prompt tokens (prefill)")->capture_default_str();
  cmd->add_option("--new-tokens", s.new_tokens, "Tokens generated per sequence")->capture_default_str();
  cmd->add_option("--repetitions", s.repetitions, "Timed runs (after one warm-up run)")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Weights and cache: fp32, fp16 (CUDA), bf16")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Seed of the weights and the prompt")->capture_default_str();
  cmd->add_option("--json", o->json_path, "Write the JSON report (docs/metrics.md) to this file");
  cmd->add_flag("-q,--quiet", o->quiet, "Log only errors");
  return [o, argv]() {
    if (o->quiet) log::set_level(log::Level::error);
    auto& s = o->settings;
    s.dtype = parse_inference_dtype(o->dtype, "decode.dtype");
    validate_model("gpt", o->preset, o->device, s.dtype, "decode.dtype");
    if (!o->json_path.empty()) check_output_path(o->json_path, "json");
    const auto config = gpt_preset(o->preset);
    const auto device = resolve_device(o->device);
    DecodeReport report;
    report.context = make_run_context(device, argv);
    report.workload = "gpt/" + o->preset;
    report.facts = make_gpt_workload(config)->facts();
    report.settings = s;
    report.result = run_decoding(config, s, device);
    const auto& r = report.result;
    std::cout << "tvie decode: gpt/" << o->preset << " on " << describe_device(device) << ", " << r.dtype
              << " weights and cache, batch " << s.batch_size << ", prompt " << s.prompt_tokens << " tokens, "
              << s.new_tokens << " new tokens (greedy), " << r.timed_runs << " timed runs after 1 warm-up\n"
              << "  time to first token (prefill): p50 " << fmt(r.ttft_ms.p50) << " ms, p99 " << fmt(r.ttft_ms.p99)
              << " ms\n"
              << "  time per output token:         p50 " << fmt(r.tpot_ms.p50) << " ms, p99 " << fmt(r.tpot_ms.p99)
              << " ms (" << r.tpot_ms.count << " steps)\n"
              << "  tokens/s (all sequences):      " << fmt(r.tokens_per_s) << "\n"
              << "  memory: parameters " << format_bytes(r.parameter_bytes)
              << (r.packed_weight_bytes > 0 ? " (" + format_bytes(r.packed_weight_bytes) + " of them packed by fbgemm)"
                                            : "")
              << ", kv_cache " << format_bytes(r.kv_cache_bytes) << " measured, "
              << format_bytes(r.kv_cache_bytes_predicted)
              << " predicted (2 x layers x batch x positions x d_model x bytes)\n"
              << "  counter: " << r.memory_counter << "; timer: " << r.timer << "\n";
    if (!o->json_path.empty()) write_file_atomically(o->json_path, to_json_string(report));
    return 0;
  };
}

}  // namespace tvie::cli
