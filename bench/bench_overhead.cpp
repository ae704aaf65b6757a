// bench_overhead: what tvie's harness costs on top of a minimal hand-written LibTorch loop.
//
// For mlp/tiny and gpt/tiny on the CPU, the same training step (forward, loss, backward, optimizer
// step, zero_grad) and the same inference batch (eval + InferenceMode forward) run through tvie
// (Trainer::step / InferenceSession::run_batch, timed per step with tvie's StepTimer as measure_training
// does) and through a hand-written loop, interleaved: each repetition runs a block of steps of one,
// then a block of the other (order alternating), on separately built modules with identical weights.
// Printed: per-step median time of each, and the median over repetitions of the ratio tvie/hand.
// Target: <= 1.03. Not a test: timings depend on the machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

namespace {

using Clock = std::chrono::steady_clock;

double block_ms(const std::function<void()>& step, int steps) {
  const auto begin = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  return std::chrono::duration<double, std::milli>(Clock::now() - begin).count() / steps;
}

struct Outcome {
  double tvie_ms, hand_ms, ratio, ratio_min, ratio_max;
};

Outcome interleave(const std::function<void()>& tvie_step, const std::function<void()>& hand_step, int reps,
                   int steps) {
  for (int i = 0; i < 5; ++i) tvie_step(), hand_step();  // warm-up, both
  std::vector<double> t, h, r;
  for (int rep = 0; rep < reps; ++rep) {
    double a, b;
    if (rep % 2 == 0) {
      a = block_ms(tvie_step, steps);
      b = block_ms(hand_step, steps);
    } else {
      b = block_ms(hand_step, steps);
      a = block_ms(tvie_step, steps);
    }
    t.push_back(a);
    h.push_back(b);
    r.push_back(a / b);
  }
  const auto s = tvie::summarize(r);
  return {tvie::summarize(t).p50, tvie::summarize(h).p50, s.p50, s.min, s.max};
}

}  // namespace

int main(int argc, char** argv) {
  tvie::install_cpu_memory_counter();  // as the tvie CLI runs: the counting allocator is part of the cost
  tvie::log::set_level(tvie::log::Level::warn);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 21;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const c10::Device cpu(c10::kCPU);
  std::printf(
      "bench_overhead: tvie vs hand-written LibTorch loop, CPU, %d threads, %d repetitions x %d steps, "
      "interleaved\n",
      torch::get_num_threads(), reps, steps);
  std::printf("%-10s %-10s %14s %14s %14s %18s %8s\n", "model", "mode", "tvie ms/step", "hand ms/step", "median ratio",
              "ratio min..max", "<=1.03");
  for (const std::string model : {"mlp", "gpt"}) {
    auto w = tvie::make_zoo_workload(model, "tiny");
    tvie::TrainSettings ts;  // defaults: batch 8, adamw
    tvie::InferSettings is;  // defaults: batch 8, fp32

    // --- training step ---------------------------------------------------------------------------
    tvie::Trainer trainer(*w, ts, cpu);
    auto timer = tvie::make_step_timer(cpu);
    auto tvie_train = [&] {
      timer->start();
      trainer.step();
      timer->stop();
      if (timer->collect_ms().empty()) std::abort();
    };
    torch::manual_seed(ts.seed);
    auto module = w->make_module();
    torch::optim::AdamW optimizer(module->parameters(),
                                  torch::optim::AdamWOptions(ts.learning_rate).weight_decay(ts.weight_decay));
    const auto batch = w->make_batch(ts.batch_size, cpu, ts.seed);
    auto hand_train = [&] {
      auto loss = w->loss(w->forward(*module, batch.input), batch);
      loss.backward();
      optimizer.step();
      optimizer.zero_grad(true);
    };
    const auto tr = interleave(tvie_train, hand_train, reps, steps);
    std::printf("%-10s %-10s %14.4f %14.4f %14.4f %8.4f..%-8.4f %8s\n", model.c_str(), "train", tr.tvie_ms, tr.hand_ms,
                tr.ratio, tr.ratio_min, tr.ratio_max, tr.ratio <= 1.03 ? "yes" : "no");

    // --- inference batch --------------------------------------------------------------------------
    tvie::InferenceSession session(*w, is, cpu, &trainer.module());
    auto infer_timer = tvie::make_step_timer(cpu);
    auto tvie_infer = [&] {
      infer_timer->start();
      session.run_batch();
      infer_timer->stop();
      if (infer_timer->collect_ms().empty()) std::abort();
    };
    torch::manual_seed(is.seed);
    auto eval_module = w->make_module();
    tvie::copy_weights(trainer.module(), *eval_module);
    eval_module->eval();
    const auto infer_batch = w->make_batch(is.batch_size, cpu, is.seed);
    auto hand_infer = [&] {
      c10::InferenceMode guard;
      w->forward(*eval_module, infer_batch.input);
    };
    const auto in = interleave(tvie_infer, hand_infer, reps, steps);
    std::printf("%-10s %-10s %14.4f %14.4f %14.4f %8.4f..%-8.4f %8s\n", model.c_str(), "infer", in.tvie_ms, in.hand_ms,
                in.ratio, in.ratio_min, in.ratio_max, in.ratio <= 1.03 ? "yes" : "no");
  }
  return 0;
}
