// Your model under a serving load: a Workload of your own served in MLPerf LoadGen's server scenario (Poisson
// arrivals at a target rate, a dynamic batcher, latency from each request's scheduled arrival), then the
// highest rate whose p99 latency stays within a bound.
//
//   build/bin/serve_your_model [--device cpu|cuda|auto] [--qps Q] [--p99-ms X]
#include <cstring>
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

namespace {

// A small ranking model: 32 sparse feature ids per request, embedded and averaged, then an MLP to one score.
// ids [B, 32] -> score [B, 1]
struct RankerImpl : torch::nn::Module {
  RankerImpl()
      : embedding(register_module("embedding", torch::nn::Embedding(10000, 64))),
        hidden(register_module("hidden", torch::nn::Linear(64, 256))),
        score(register_module("score", torch::nn::Linear(256, 1))) {}
  torch::Tensor forward(const torch::Tensor& ids) {
    const auto pooled = embedding->forward(ids).mean(1);          // [B, 32, 64] -> [B, 64]
    return score->forward(torch::relu(hidden->forward(pooled)));  // [B, 256] -> [B, 1]
  }
  torch::nn::Embedding embedding;
  torch::nn::Linear hidden, score;
};

class RankerWorkload : public tvie::Workload {
 public:
  std::string name() const override { return "ranker (example)"; }
  std::shared_ptr<torch::nn::Module> make_module() const override { return std::make_shared<RankerImpl>(); }
  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    return static_cast<RankerImpl&>(module).forward(input);
  }
  tvie::Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    tvie::Batch b;
    b.input = torch::randint(0, 10000, {batch_size, 32}, gen, torch::kLong).to(device);
    b.target = torch::rand({batch_size, 1}, gen).to(device);  // a click probability
    b.samples = batch_size;
    return b;
  }
  torch::Tensor loss(const torch::Tensor& output, const tvie::Batch& batch) const override {
    return torch::binary_cross_entropy_with_logits(output, batch.target);
  }
  tvie::ModelFacts facts() const override {
    tvie::ModelFacts f;
    f.parameter_count = 10000 * 64 + (64 * 256 + 256) + (256 + 1);
    f.forward_flops_per_sample = 2.0 * (64 * 256 + 256);  // the MLP's multiply-adds (the embedding is a lookup)
    return f;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string device = "auto";
  double qps = 500, p99_ms = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    if (std::strcmp(argv[i], "--qps") == 0) qps = std::stod(argv[i + 1]);
    if (std::strcmp(argv[i], "--p99-ms") == 0) p99_ms = std::stod(argv[i + 1]);
  }
  try {
    tvie::install_cpu_memory_counter();
    RankerWorkload workload;
    tvie::ServeSettings settings;  // the server scenario: Poisson arrivals, a dynamic batcher
    settings.target_qps = qps;
    settings.max_batch = 32;
    settings.max_queue_delay_us = 1000;
    settings.query_count = 600;
    settings.min_query_count = 300;
    settings.min_duration_ms = 500;
    const auto at_rate = tvie::run_serve(workload, settings, {device});
    tvie::ConsoleReporter(std::cout).report(at_rate);

    settings.max_qps_search = tvie::MaxQpsSearch{};
    settings.max_qps_search->p99_bound_ms = p99_ms;
    settings.max_qps_search->refine_steps = 2;
    const auto search = tvie::run_serve(workload, settings, {device});
    std::cout << "\nthe highest rate with p99 <= " << p99_ms << " ms: " << search.search->max_qps << " QPS\n";
  } catch (const std::exception& e) {
    std::cerr << "serve_your_model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
