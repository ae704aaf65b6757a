// host_projection: this machine's CPU projected from its catalog class against the measured training step.
//
// tvie plan projects onto cards it has never run on from their datasheet peaks and the catalog's efficiencies; the
// host's CPU has a card of its own (its class's per-cycle peaks x cores x clock), so here the projection can be
// held against a measurement. For gpt small (fp32 AdamW, batch 8) the training step is measured (measure_training:
// 2 warm-up steps, 4 timed) and projected onto the host card at the intra-op thread count; printed: the class, the
// measured mean step, the roofline bound and the estimate, and the ratio estimate / measured. The catalog's CPU
// efficiencies aim at a ratio within 0.5 .. 2. Not a test: a time depends on the machine and on what else runs.
#include <cstdio>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

int main() {
  const auto& catalog = tvie::accelerator_catalog();
  const tvie::HostInfo host = tvie::describe_host();
  const std::string cls = tvie::host_cpu_class(host.cpu_features_usable);
  const double ghz = tvie::host_clock_ghz();
  if (cls.empty() || ghz <= 0) {
    std::printf("host_projection: no CPU class or clock for this machine (%s): nothing to project\n",
                host.cpu_model.c_str());
    return 1;
  }
  const tvie::CpuClass* cpu = nullptr;
  for (const auto& c : catalog.cpu_classes)
    if (c.id == cls) cpu = &c;
  if (cpu == nullptr) return 1;
  const tvie::Accelerator card = tvie::host_accelerator(*cpu, host.intra_op_threads, ghz, 1);
  const auto w = tvie::make_zoo_workload("gpt", "small");
  tvie::TrainSettings t;
  t.steps = 4;
  t.warmup_steps = 2;
  const auto measured = tvie::measure_training(*w, t, c10::Device(c10::kCPU));
  const auto p = tvie::project_time(tvie::training_step_work(*w, t), card);
  const double step_s = measured.step.mean / 1000;
  std::printf("host: %s; class %s, %lld intra-op threads at %.2f GHz\n", host.cpu_model.c_str(), cls.c_str(),
              static_cast<long long>(host.intra_op_threads), ghz);
  std::printf("gpt small, fp32 AdamW training step, batch %lld: measured mean %.1f ms (%lld timed steps)\n",
              static_cast<long long>(t.batch_size), step_s * 1e3, static_cast<long long>(t.steps));
  std::printf("projected onto the host card: bound %.1f ms, estimate %.1f ms\n", p.bound_s * 1e3, p.estimate_s * 1e3);
  std::printf("estimate / measured: %.2f (the catalog's CPU efficiencies aim at 0.5 .. 2); bound <= measured: %s\n",
              p.estimate_s / step_s, p.bound_s <= step_s ? "yes" : "NO");
  return 0;
}
