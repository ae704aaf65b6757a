// The work of a workload without a trace, counted by LibTorch's profiler (tvie/projection.hpp, profiled_work).
#include <torch/csrc/autograd/profiler_kineto.h>
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
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/projection.hpp>
#include <tvie/workload.hpp>

namespace tvie {
namespace {

namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Operators that only make a new view of their input (or allocate without writing): no kernel, no traffic.
bool metadata_only(const std::string& name) {
  static const std::set<std::string> names = {
      "aten::view",          "aten::_unsafe_view",   "aten::reshape",     "aten::t",
      "aten::transpose",     "aten::permute",        "aten::expand",      "aten::as_strided",
      "aten::slice",         "aten::select",         "aten::unsqueeze",   "aten::squeeze",
      "aten::detach",        "aten::detach_",        "aten::alias",       "aten::empty",
      "aten::empty_strided", "aten::resize_",        "aten::flatten",     "aten::unflatten",
      "aten::split",         "aten::chunk",          "aten::narrow",      "aten::numpy_T",
      "aten::lift_fresh",    "aten::empty_like",     "aten::contiguous",  "aten::expand_as",
      "aten::view_as",       "aten::unbind",         "aten::result_type", "aten::size",
      "aten::stride",        "aten::is_nonzero",     "aten::item",        "aten::_local_scalar_dense",
      "aten::set_",          "aten::_reshape_alias", "aten::type_as",     "aten::to",
      "aten::_to_copy_meta"};
  return names.count(name) > 0;
}

// The class an operator's kernels belong to, by its name (forward and backward variants alike).
OpClass classify(const std::string& name) {
  if (has(name, "scaled_dot_product") || has(name, "flash_attention") || has(name, "efficient_attention"))
    return OpClass::attention;
  if (has(name, "conv")) return OpClass::convolution;
  if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm" ||
      name == "aten::matmul" || name == "aten::addmv" || name == "aten::mv" || name == "aten::dot" ||
      name == "aten::linear" || name == "aten::_int_mm" || has(name, "_linear"))
    return OpClass::matmul;
  if (has(name, "norm")) return OpClass::normalization;
  return OpClass::elementwise;
}

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

struct Event {
  std::string name;
  uint64_t thread = 0, start = 0, end = 0;
  double flops = 0;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
};

// 2 x L x S x (E + Ev) per batch-and-head: QK^T and PV (LibTorch's profiler has no FLOP formula for attention).
double attention_flops(const Event& e) {
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
PhaseWork count(std::vector<Event> events, const std::set<std::vector<int64_t>>& weights) {
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;  // the enclosing event first
  });
  std::vector<bool> leaf(events.size(), true);
  std::vector<int> inside_attention(events.size(), -1);
  std::vector<bool> flops_above(events.size(), false);  // an enclosing event has a FLOP figure
  std::vector<bool> unit(events.size(), false);         // the outermost operator of a non-elementwise class
  std::vector<bool> under_unit(events.size(), false);   // inside such an operator
  std::vector<size_t> stack;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    while (!stack.empty() && (events[stack.back()].thread != e.thread || events[stack.back()].end <= e.start))
      stack.pop_back();
    if (!stack.empty()) {
      const size_t parent = stack.back();
      leaf[parent] = false;
      inside_attention[i] = inside_attention[parent];
      flops_above[i] = flops_above[parent] || events[parent].flops > 0;
      under_unit[i] = under_unit[parent] || unit[parent];
    }
    unit[i] = !under_unit[i] && !metadata_only(e.name) && classify(e.name) != OpClass::elementwise;
    if (inside_attention[i] < 0 && classify(e.name) == OpClass::attention) inside_attention[i] = static_cast<int>(i);
    stack.push_back(i);
  }
  PhaseWork w;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const bool attention = inside_attention[i] >= 0;
    const OpClass c = attention ? OpClass::attention : classify(e.name);
    if (attention && inside_attention[i] == static_cast<int>(i) && starts_with(e.name, "aten::scaled_dot_product"))
      w[c].flops += attention_flops(e);
    else if (!attention && e.flops > 0 && !flops_above[i])
      w[c].flops += e.flops;
    if (!unit[i] && (!leaf[i] || under_unit[i] || metadata_only(e.name))) continue;
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

// Runs `body` under the profiler (CPU activities, input shapes, FLOP figures) and returns its aten events.
template <typename Body>
std::vector<Event> profile(Body&& body) {
  compat::quiet_kineto();
  impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true, /*profile_memory=*/false,
                              /*with_stack=*/false, /*with_flops=*/true);
  prof::prepareProfiler(config, {impl::ActivityType::CPU});
  prof::enableProfiler(config, {impl::ActivityType::CPU});
  try {
    body();
  } catch (...) {
    prof::disableProfiler();
    throw;
  }
  const auto result = prof::disableProfiler();
  std::vector<Event> out;
  for (const auto& e : result->events()) {
    std::string name = e.name();
    if (!starts_with(name, "aten::")) continue;
    Event x;
    x.name = std::move(name);
    x.thread = e.startThreadId();
    x.start = e.startNs();
    x.end = e.endNs();
    x.flops = static_cast<double>(e.flops());
    if (e.hasShapes())
      for (const auto& s : e.shapes()) x.shapes.push_back(s);
    if (e.hasTypes())
      for (const auto& t : e.dtypes()) x.dtypes.push_back(t);
    out.push_back(std::move(x));
  }
  return out;
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
