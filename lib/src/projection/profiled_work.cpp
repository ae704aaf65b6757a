// The work of a workload without a trace, counted by LibTorch's profiler (tvie/projection.hpp, profiled_work).
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/compat.hpp"
#include "core/text.hpp"
#include "measure/op_profile.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/projection.hpp>
#include <tvie/workload.hpp>

namespace tvie {
namespace {

int64_t element_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes = {{"float", 4},
                                                       {"double", 8},
                                                       {"c10::Half", 2},
                                                       {"c10::BFloat16", 2},
                                                       {"long int", 8},
                                                       {"long", 8},
                                                       {"int", 4},
                                                       {"short int", 2},
                                                       {"signed char", 1},
                                                       {"unsigned char", 1},
                                                       {"bool", 1},
                                                       {"c10::Float8_e4m3fn", 1},
                                                       {"c10::Float8_e5m2", 1},
                                                       {"c10::complex<float>", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;  // 0: not a tensor (a scalar, a list, None)
}

// Shapes of the module's parameters (and their transposes): an operator input of such a shape counts as weights.
std::set<std::vector<int64_t>> weight_shapes(torch::nn::Module& module) {
  std::set<std::vector<int64_t>> shapes;
  for (const auto& p : module.parameters()) {
    std::vector<int64_t> s(p.sizes().begin(), p.sizes().end());
    shapes.insert(s);
    if (s.size() == 2) shapes.insert({s[1], s[0]});
  }
  return shapes;
}

using detail::ProfiledOp;

// 2 x L x S x (E + Ev) per batch-and-head: QK^T and PV (LibTorch's profiler has no FLOP formula for attention).
double attention_flops(const ProfiledOp& e) {
  if (e.shapes.size() < 3 || e.shapes[0].size() < 2 || e.shapes[1].size() < 2 || e.shapes[2].size() < 2) return 0;
  const auto& q = e.shapes[0];
  const auto& k = e.shapes[1];
  const auto& v = e.shapes[2];
  double batch_heads = 1;
  for (size_t i = 0; i + 2 < q.size(); ++i) batch_heads *= static_cast<double>(q[i]);
  const double l = static_cast<double>(q[q.size() - 2]), s = static_cast<double>(k[k.size() - 2]);
  const double dk = static_cast<double>(q.back()), dv = static_cast<double>(v.back());
  return 2 * batch_heads * l * s * (dk + dv);
}

// What the aten operators of one profiled region compute and move. The profiler's events nest (aten::linear
// calls aten::addmm, which copies its bias with aten::copy_): FLOPs are taken from the outermost event that has a
// figure (LibTorch's profiler computes them for mm, addmm, bmm, baddbmm, conv2d, mul and add). Bytes and kernels:
// the outermost operator of a matrix, convolution, attention or normalisation class counts as one unit (what is
// inside it is its implementation), any other operator where it is innermost (a leaf); each reads its recorded
// inputs and writes an output the size of its largest input (the profiler records input shapes only).
// Attention's FLOPs come from the shapes of the outermost scaled_dot_product_attention.
PhaseWork count(std::vector<ProfiledOp> events, const std::set<std::vector<int64_t>>& weights) {
  const detail::OpNesting nest = detail::nest_operators(events);
  PhaseWork w;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const bool attention = nest.inside_attention[i] >= 0;
    const OpClass c = attention ? OpClass::attention : detail::classify_operator(e.name);
    if (attention && nest.inside_attention[i] == static_cast<int>(i) &&
        e.name.rfind("aten::scaled_dot_product", 0) == 0)
      w[c].flops += attention_flops(e);
    else if (!attention && e.flops > 0 && !nest.flops_above[i])
      w[c].flops += e.flops;
    if (!nest.unit[i] && (!nest.leaf[i] || nest.under_unit[i] || detail::metadata_only(e.name))) continue;
    double largest = 0;
    for (size_t k = 0; k < e.shapes.size() && k < e.dtypes.size(); ++k) {
      const int64_t size = element_bytes(e.dtypes[k]);
      if (size == 0) continue;
      double elements = 1;
      for (int64_t d : e.shapes[k]) elements *= static_cast<double>(d);
      if (weights.count(e.shapes[k]) && e.shapes[k].size() >= 1)
        w[c].weight_elements += elements;
      else
        w[c].bytes += elements * static_cast<double>(size);
      largest = std::max(largest, elements * static_cast<double>(size));
    }
    w[c].bytes += largest;  // the output
    w[c].kernels += 1;
  }
  return w;
}

template <typename Body>
std::vector<ProfiledOp> profile(Body&& body) {
  return detail::profile_operators(std::forward<Body>(body)).ops;
}

struct Counted {
  PhaseWork forward, backward;
};

Counted profile_at(const Workload& workload, torch::nn::Module& module, int64_t batch_size, bool training,
                   const std::set<std::vector<int64_t>>& weights) {
  const c10::Device cpu(c10::kCPU);
  const Batch batch = workload.make_batch(batch_size, cpu, /*seed=*/0);
  Counted c;
  if (!training) {
    c.forward = count(profile([&] {
                        c10::InferenceMode guard;
                        workload.forward(module, batch.input);
                      }),
                      weights);
    return c;
  }
  torch::Tensor loss;
  c.forward = count(profile([&] { loss = workload.loss(workload.forward(module, batch.input), batch); }), weights);
  c.backward = count(profile([&] { loss.backward(); }), weights);
  module.zero_grad();
  return c;
}

// w(b) = w(1) + (b - 1) x (w(2) - w(1)), field by field, never below zero; kernels as at batch 1.
PhaseWork extrapolate(const PhaseWork& one, const PhaseWork& two, int64_t batch_size) {
  PhaseWork w;
  const double extra = static_cast<double>(batch_size - 1);
  for (size_t i = 0; i < w.by_class.size(); ++i) {
    const auto& a = one.by_class[i];
    const auto& b = two.by_class[i];
    const auto at = [&](double x1, double x2) { return std::max(0.0, x1 + extra * (x2 - x1)); };
    w.by_class[i] = {at(a.flops, b.flops), at(a.bytes, b.bytes), at(a.weight_elements, b.weight_elements), a.kernels};
  }
  return w;
}

struct Profile {
  Counted one, two;
  int64_t parameter_tensors = 0;
};

// One profile per workload (name and parameter count) and mode in this process: profiling runs the model twice.
const Profile& cached_profile(const Workload& workload, bool training) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int64_t, bool>, Profile> cache;
  const auto key = std::make_tuple(workload.name(), workload.facts().parameter_count, training);
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  log::info(cat("counting the work of ", workload.name(), " (no trace) with LibTorch's profiler: ",
                training ? "forward and backward" : "forward", " at batch 1 and 2 on the CPU"));
  const auto refuse = [&](const std::string& why) {
    return InvalidArgument("model", workload.name(),
                           cat("a workload the profiler can run at batch 1 and 2 on the CPU (", why, ")"));
  };
  torch::manual_seed(0);
  auto module = workload.make_module();
  if (!module) throw refuse("make_module() returned no module");
  module->to(c10::Device(c10::kCPU));
  training ? module->train() : module->eval();
  if (!training) workload.prepare_inference(*module);
  const auto weights = weight_shapes(*module);
  Profile p;
  try {
    p.one = profile_at(workload, *module, 1, training, weights);
    p.two = profile_at(workload, *module, 2, training, weights);
  } catch (const std::exception& e) {
    throw refuse(detail::first_line(e.what()));
  }
  for (const auto& t : module->parameters()) p.parameter_tensors += t.requires_grad() ? 1 : 0;
  return cache.emplace(key, p).first->second;
}

}  // namespace

ProfiledWork profiled_work(const Workload& workload, int64_t batch_size, bool training) {
  if (batch_size < 1) throw InvalidArgument("batch_size", cat(batch_size), "an integer >= 1");
  const Profile& p = cached_profile(workload, training);
  ProfiledWork w;
  w.forward = extrapolate(p.one.forward, p.two.forward, batch_size);
  if (training) {
    w.backward = extrapolate(p.one.backward, p.two.backward, batch_size);
    // No FLOP formula in the profiler for the backward of convolution and attention: twice the forward's (the
    // input's and the weights' gradients; for attention, dQ and dK/dV), the convention of the zoo's counts.
    for (OpClass c : {OpClass::convolution, OpClass::attention})
      if (w.backward[c].flops == 0) w.backward[c].flops = 2 * w.forward[c].flops;
  }
  double matrix = 0;  // one more sample's matrix FLOPs
  for (OpClass c : {OpClass::matmul, OpClass::convolution, OpClass::attention})
    matrix += p.two.forward[c].flops - p.one.forward[c].flops;
  w.forward_flops_per_sample = std::max(0.0, matrix);
  w.parameter_tensors = p.parameter_tensors;
  return w;
}

}  // namespace tvie
