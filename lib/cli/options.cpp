#include "options.hpp"

#include <map>

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
      {"serve.scenario", "--scenario"},
      {"serve.target_qps", "--qps"},
      {"serve.max_batch", "--max-batch"},
      {"serve.max_queue_delay_us", "--max-queue-delay-us"},
      {"serve.query_count", "--queries"},
      {"serve.min_query_count", "--min-queries"},
      {"serve.min_duration_ms", "--min-duration-ms"},
      {"serve.dtype", "--dtype"},
      {"decode.dtype", "--dtype"},
      {"decode.batch_size", "--batch"},
      {"decode.prompt_tokens", "--prompt"},
      {"decode.new_tokens", "--new-tokens"},
      {"decode.repetitions", "--repetitions"},
  };
  const auto it = options.find(field);
  return it == options.end() ? field : it->second;
}

}  // namespace tvie::cli
