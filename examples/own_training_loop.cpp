// Research code that keeps its own training loop: tvie's pieces around it, not tvie's Trainer. A MemoryProbe reads
// the same counters as the ledger (tvie's counting allocator on the CPU, the caching allocator on CUDA), a
// StepTimer times the phases (CUDA events on a GPU, so no synchronisation inside the loop), and a
// MemoryTimelineRecorder records the live bytes through one step. The loop, the model and the optimizer are
// plain LibTorch.
//
//   build/bin/own_training_loop [--device cpu|cuda|auto] [--steps N]
#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

namespace {

// A two-layer classifier, as research code would have it: x [B, 256] -> logits [B, 10].
struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : hidden(register_module("hidden", torch::nn::Linear(256, 1024))),
        out(register_module("out", torch::nn::Linear(1024, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) { return out->forward(torch::relu(hidden->forward(x))); }
  torch::nn::Linear hidden, out;
};
TORCH_MODULE(Classifier);

}  // namespace

int main(int argc, char** argv) {
  std::string device_spec = "auto";
  int steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) device_spec = argv[i + 1];
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::stoi(argv[i + 1]);
  }
  try {
    tvie::install_cpu_memory_counter();  // before the first tensor: every CPU allocation is counted
    const c10::Device device = tvie::resolve_device(device_spec);
    auto probe = tvie::make_memory_probe(device);
    // One batch, made before the baseline: what follows counts the model's own bytes only.
    const auto x = torch::randn({64, 256}, torch::TensorOptions().device(device));
    const auto y = torch::randint(0, 10, {64}, torch::TensorOptions().device(device).dtype(torch::kLong));
    const int64_t baseline = probe->allocated_bytes();

    torch::manual_seed(0);
    Classifier model;
    model->to(device);
    const int64_t weights = probe->allocated_bytes() - baseline;
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));

    auto timer = tvie::make_step_timer(device);
    tvie::MemoryTimeline timeline;
    int64_t after_first_step = 0;
    probe->reset_peak();
    for (int step = 0; step < steps; ++step) {
      // The second step is the steady state (the optimizer's moments exist from the first on): record it.
      std::unique_ptr<tvie::MemoryTimelineRecorder> recorder;
      if (step == 1) recorder = std::make_unique<tvie::MemoryTimelineRecorder>(device, *probe, baseline);
      double mark = recorder ? recorder->now_ms() : 0;
      auto phase = [&](int index) {  // the timer's phase, and the same mark on the timeline
        timer->mark(index);
        if (!recorder) return;
        recorder->add_phase(tvie::phase_name(index), mark, recorder->now_ms());
        mark = recorder->now_ms();
      };
      timer->start();
      phase(tvie::kPhaseData);  // the batch is already on the device here
      const auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      phase(tvie::kPhaseForward);
      loss.backward();
      phase(tvie::kPhaseBackward);
      optimizer.step();
      optimizer.zero_grad(/*set_to_none=*/true);
      phase(tvie::kPhaseOptimizer);
      if (recorder) timeline = recorder->finish("step 2 of my own loop");
      if (step == 0) after_first_step = probe->allocated_bytes() - baseline;
    }
    const auto phases = tvie::training::summarize_phases(timer->collect_phases_ms(tvie::kPhaseCount), false);

    std::cout << "device: " << device.str() << "; memory: " << probe->counter_description() << "\n";
    std::cout << "weights:            " << tvie::format_bytes(weights) << "\n";
    std::cout << "optimizer state:    " << tvie::format_bytes(after_first_step - weights)
              << " (what stays after a step beyond the weights: AdamW's two moments)\n";
    std::cout << "peak over the loop: " << tvie::format_bytes(probe->peak_allocated_bytes() - baseline) << "\n";
    std::cout << "step 2, memory over time: " << timeline.events << " allocations and frees, from "
              << tvie::format_bytes(timeline.start_bytes) << " up to " << tvie::format_bytes(timeline.peak_bytes)
              << " and back to " << tvie::format_bytes(timeline.end_bytes) << "\n";
    std::cout << "phases (median over " << steps << " steps, " << timer->description() << "):" << std::fixed
              << std::setprecision(3);
    for (const auto& p : phases.phases) std::cout << "  " << p.name << " " << p.p50_ms << " ms";
    std::cout << "\n";
  } catch (const std::exception& e) {
    std::cerr << "own_training_loop: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
