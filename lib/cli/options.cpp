#include "options.hpp"

#include <map>
#include <sstream>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie::cli {

void add_common_options(CLI::App* cmd, CommonOptions& o) {
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: last wins
  auto& s = o.settings;
  cmd->add_option("--model", s.model, "Zoo model: mlp, cnn, gpt")->capture_default_str();
  cmd->add_option("--preset", s.preset, "Size preset: tiny, small, and per model large / resnet18-cifar / gpt2-small")
      ->capture_default_str();
  cmd->add_option("--device", s.device, "auto (CUDA if available, else CPU), cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--batch", s.train.batch_size, "Training samples per optimizer step")->capture_default_str();
  cmd->add_option("--accumulate", s.train.accumulate, "Micro-batches per optimizer step (gradient accumulation)")
      ->capture_default_str();
  cmd->add_option("--steps", s.train.steps, "Timed training steps")->capture_default_str();
  cmd->add_option("--warmup", s.train.warmup_steps,
                  "Untimed warm-up steps before the timed ones (after the instrumented ledger steps)")
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "sgd, sgd-momentum, adam, adamw")->capture_default_str();
  cmd->add_option("--lr", s.train.learning_rate, "Learning rate")->capture_default_str();
  cmd->add_option("--momentum", s.train.momentum, "Momentum of sgd-momentum")->capture_default_str();
  cmd->add_option("--weight-decay", s.train.weight_decay, "Decoupled weight decay of adamw")->capture_default_str();
  cmd->add_option("--precision", o.precision,
                  "fp32, amp-bf16 (autocast), amp-fp16 (autocast + loss scaling, CUDA), bf16 (pure bf16 weights)")
      ->capture_default_str();
  cmd->add_option("--clip", s.train.clip_grad_norm, "Clip the gradients' global L2 norm to this (0: off)")
      ->capture_default_str();
  cmd->add_option("--checkpoint", o.checkpoint, "Activation checkpointing of transformer blocks: none, blocks, every-K")
      ->capture_default_str();
  cmd->add_flag("--cuda-graph", s.train.cuda_graph, "Capture the training step in a CUDA graph and replay it (CUDA)");
  cmd->add_option("--data-batches", s.train.data_batches, "Distinct synthetic batches cycled through")
      ->capture_default_str();
  cmd->add_option("--loss-every", s.train.loss_every, "Loss-curve point every N steps (0: about ten points)")
      ->capture_default_str();
  cmd->add_option("--seed", s.train.seed, "Seed of the initial weights and the synthetic data")->capture_default_str();
  cmd->add_option("--json", o.json_path, "Also write the report as JSON to this file (atomically)");
  cmd->add_flag("-v,--verbose", o.verbose, "Log debug messages");
  cmd->add_flag("-q,--quiet", o.quiet, "Log only errors");
}

void apply_common_options(CommonOptions& o) {
  if (o.verbose) log::set_level(log::Level::debug);
  if (o.quiet) log::set_level(log::Level::error);
  auto& t = o.settings.train;
  t.optimizer = parse_optimizer(o.optimizer);
  t.precision = parse_train_precision(o.precision);
  t.checkpoint_every = parse_checkpoint(o.checkpoint);
}

void validate_model(const std::string& model, const std::string& preset, const std::string& device,
                    InferenceDtype dtype, const std::string& dtype_field) {
  CompareSettings s;
  s.model = model;
  s.preset = preset;
  s.device = device;
  s.infer.dtype = dtype;
  try {
    validate(s);
  } catch (const InvalidArgument& e) {
    if (e.field() != "infer.dtype") throw;
    throw InvalidArgument(dtype_field, e.value(), e.accepted());
  }
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
    for (int64_t v = out.back() * ratio; v < end; v *= ratio) out.push_back(v);
  }
  if (out.empty()) throw InvalidArgument(field, text, accepted);
  return out;
}

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
      {"train.precision", "--precision"},
      {"train.clip_grad_norm", "--clip"},
      {"train.checkpoint_every", "--checkpoint"},
      {"train.cuda_graph", "--cuda-graph"},
      {"train.data_batches", "--data-batches"},
      {"train.loss_every", "--loss-every"},
      {"infer.batch_size", "--infer-batch"},
      {"infer.steps", "--infer-steps"},
      {"infer.warmup_steps", "--warmup"},
      {"infer.dtype", "--infer-dtype"},
      {"infer.cuda_graph", "--infer-cuda-graph"},
      {"infer_sweep.batch_sizes", "--batch"},
      {"torchscript.path", "--torchscript"},
      {"torchscript.input_shape", "--input-shape"},
      {"torchscript.vocab_size", "--vocab"},
      {"torchscript.fusion", "--fusion"},
      {"infer_sweep.dtypes", "--dtype"},
      {"infer_sweep.steps", "--steps"},
      {"infer_sweep.warmup_steps", "--warmup"},
      {"infer_sweep.cuda_graph", "--cuda-graph"},
      {"infer_sweep.cpu_memory_limit_mb", "--cpu-memory-limit-mb"},
      {"serve.scenario", "--scenario"},
      {"serve.target_qps", "--qps"},
      {"serve.max_batch", "--max-batch"},
      {"serve.max_queue_delay_us", "--max-queue-delay-us"},
      {"serve.query_count", "--queries"},
      {"serve.min_query_count", "--min-queries"},
      {"serve.min_duration_ms", "--min-duration-ms"},
      {"serve.dtype", "--dtype"},
      {"serve.p99_bound_ms", "--p99-ms"},
      {"serve.refine_steps", "--refine-steps"},
      {"decode.dtype", "--dtype"},
      {"launch.nproc", "--nproc"},
      {"launch.master_port", "--master-port"},
      {"launch.grace_s", "--grace-s"},
      {"launch.command", "COMMAND (after --)"},
      {"dist.backend", "--backend"},
      {"dist.bucket_mb", "--bucket-mb"},
      {"dist.timeout_s", "--timeout-s"},
      {"allreduce.min_bytes", "--min-bytes"},
      {"allreduce.max_bytes", "--max-bytes"},
      {"allreduce.factor", "--factor"},
      {"allreduce.iters", "--iters"},
      {"allreduce.warmup", "--warmup"},
      {"allreduce.dtype", "--dtype"},
      {"csv", "--csv"},
      {"env.RANK", "RANK (environment)"},
      {"env.WORLD_SIZE", "WORLD_SIZE (environment)"},
      {"env.LOCAL_RANK", "LOCAL_RANK (environment)"},
      {"env.MASTER_PORT", "MASTER_PORT (environment)"},
      {"decode.batch_size", "--batch"},
      {"decode.prompt_tokens", "--prompt"},
      {"decode.new_tokens", "--new-tokens"},
      {"decode.repetitions", "--repetitions"},
  };
  const auto it = options.find(field);
  return it == options.end() ? field : it->second;
}

}  // namespace tvie::cli
