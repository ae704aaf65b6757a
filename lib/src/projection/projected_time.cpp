// Projected times put together (projection/projected_time.hpp).
#include "projection/projected_time.hpp"

namespace tvie::projected_time {

void add_time(ProjectedTime& into, const ProjectedTime& t) {
  if (!t.supported && into.supported) into.supported = false, into.unsupported = t.unsupported;
  into.bound_s += t.bound_s;
  into.estimate_s += t.estimate_s;
  for (size_t c = 0; c < into.by_class.size(); ++c) {
    into.by_class[c].bound_s += t.by_class[c].bound_s;
    into.by_class[c].estimate_s += t.by_class[c].estimate_s;
  }
  into.optimizer.bound_s += t.optimizer.bound_s;
  into.optimizer.estimate_s += t.optimizer.estimate_s;
  into.launch_s += t.launch_s;
  into.kernels += t.kernels;
}

StepWork between(const StepWork& a, const StepWork& b, double f) {
  StepWork w = a;
  for (size_t c = 0; c < w.forward.by_class.size(); ++c) {
    OpWork& o = w.forward.by_class[c];
    const OpWork &x = a.forward.by_class[c], &y = b.forward.by_class[c];
    o.flops = x.flops + f * (y.flops - x.flops);
    o.bytes = x.bytes + f * (y.bytes - x.bytes);
    o.weight_elements = x.weight_elements + f * (y.weight_elements - x.weight_elements);
    o.kernels = x.kernels + f * (y.kernels - x.kernels);
  }
  w.model_flops = a.model_flops + f * (b.model_flops - a.model_flops);
  return w;
}

GenerationTime project_generation(const std::function<const StepWork&(int64_t)>& work, int64_t prompt,
                                  int64_t new_tokens, const Accelerator& card, const StepProjector& prefill_time,
                                  const StepProjector& step_time) {
  const auto project = [&](const StepProjector& f, const StepWork& w) { return f ? f(w) : project_time(w, card); };
  GenerationTime g;
  g.prefill = project(prefill_time, work(0));
  const int64_t steps = new_tokens - 1;
  if (steps <= 0) return g;
  const StepWork& first = work(prompt);  // `work` keeps what it returns (a std::map: references stay valid)
  const StepWork& last = work(prompt + steps - 1);
  for (int64_t k = 0; k < steps; ++k) {
    g.last_step = project(step_time, steps == 1 ? first : between(first, last, double(k) / double(steps - 1)));
    add_time(g.decoding, g.last_step);
  }
  return g;
}

ProjectedTime whole(const GenerationTime& g) {
  ProjectedTime t = g.prefill;
  for (size_t c = 0; c < t.by_class.size(); ++c)
    if (g.decoding.by_class[c].estimate_s > t.by_class[c].estimate_s)
      t.by_class[c].memory_bound = g.last_step.by_class[c].memory_bound;
  add_time(t, g.decoding);
  return t;
}

ProjectedTime per_step(ProjectedTime t, double n) {
  t.bound_s /= n, t.estimate_s /= n, t.launch_s /= n, t.kernels /= n;
  for (auto& c : t.by_class) c.bound_s /= n, c.estimate_s /= n;
  t.optimizer.bound_s /= n, t.optimizer.estimate_s /= n;
  return t;
}

}  // namespace tvie::projected_time
