// Bring your own model: implement tvie::Workload (module, batch maker, loss) and hand it to
// tvie::run_compare (training vs inference, measured here), then to tvie::run_plan (the same workload projected
// onto cards it never ran on: which card to train on, which to serve with). This one is a small regression
// network with a mean-squared-error loss.
//
//   build/bin/custom_workload [--device cpu|cuda|auto]
//
// In your own project:  find_package(tvie) ... target_link_libraries(app PRIVATE tvie::tvie)
#include <cstring>
#include <iostream>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

namespace {

// x: [B, 16] -> y: [B, 1]
struct RegressorImpl : torch::nn::Module {
  RegressorImpl()
      : hidden(register_module("hidden", torch::nn::Linear(16, 64))),
        out(register_module("out", torch::nn::Linear(64, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::tanh(hidden->forward(x)));  // [B, 64] -> [B, 1]
  }
  torch::nn::Linear hidden, out;
};

class RegressionWorkload : public tvie::Workload {
 public:
  std::string name() const override { return "regressor (example)"; }
  std::shared_ptr<torch::nn::Module> make_module() const override { return std::make_shared<RegressorImpl>(); }
  torch::Tensor forward(torch::nn::Module& m, const torch::Tensor& input) const override {
    return static_cast<RegressorImpl&>(m).forward(input);
  }
  // Features from N(0, 1); targets from a fixed linear rule, so the task is learnable.
  tvie::Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    auto gen = at::detail::createCPUGenerator(seed);
    tvie::Batch b;
    b.input = torch::randn({batch_size, 16}, gen, torch::kFloat32);
    b.target = b.input.sum(1, /*keepdim=*/true).mul(0.25).to(device);
    b.input = b.input.to(device);
    b.samples = batch_size;
    return b;
  }
  torch::Tensor loss(const torch::Tensor& output, const tvie::Batch& batch) const override {
    return torch::mse_loss(output.to(torch::kFloat32), batch.target);  // mean over the batch
  }
  tvie::ModelFacts facts() const override {
    tvie::ModelFacts f;
    f.parameter_count = 16 * 64 + 64 + 64 * 1 + 1;
    f.forward_flops_per_sample = 2.0 * (16 * 64 + 64 * 1);
    return f;
  }
};

}  // namespace

int main(int argc, char** argv) {
  tvie::install_cpu_memory_counter();  // before the first tensor
  tvie::RunOptions options;            // where it runs, and the command line for the report's context
  options.argv.assign(argv, argv + argc);
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--device") == 0) options.device = argv[i + 1];
  tvie::CompareSettings settings;
  settings.train.batch_size = 32;
  settings.train.steps = 50;
  settings.train.learning_rate = 1e-2;
  settings.infer.batch_size = 32;
  try {
    RegressionWorkload workload;
    tvie::ConsoleReporter console(std::cout);
    console.report(tvie::run_compare(workload, settings, options));

    // The same workload on cards it never ran on (`tvie plan` for your own module): its work counted by
    // LibTorch's profiler (it has no trace), its memory measured on this CPU at two batches and extrapolated, each
    // card's peaks, bandwidth and efficiencies from the catalog (`tvie cards`). Every figure is projected.
    tvie::PlanSettings plan;
    plan.train = settings.train;                    // per card
    plan.infer.dtype = tvie::InferenceDtype::fp16;  // every card below has fp16 matrix units
    plan.cards = "t4,l4,a100-80gb-sxm,h100-sxm";
    plan.serve_qps = 20000;  // the requests per second to serve ...
    plan.p99_ms = 5;         // ... with the p99 latency within this
    console.report(tvie::run_plan(workload, plan, options));
  } catch (const tvie::InvalidArgument& e) {
    std::cerr << "custom_workload: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
