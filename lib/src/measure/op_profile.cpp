// LibTorch's profiler around a piece of work, and the classes and nesting of its operators (op_profile.hpp).
#include "measure/op_profile.hpp"

#include <ATen/record_function.h>
#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/compat.hpp"

namespace tvie::detail {
namespace {

namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool device_work(uint8_t activity) {
  using libkineto::ActivityType;
  return activity == static_cast<uint8_t>(ActivityType::CONCURRENT_KERNEL) ||
         activity == static_cast<uint8_t>(ActivityType::GPU_MEMCPY) ||
         activity == static_cast<uint8_t>(ActivityType::GPU_MEMSET);
}

}  // namespace

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

OpClass classify_operator(const std::string& name) {
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

void mark_profile(const std::string& name) {
  at::RecordFunction guard(at::RecordScope::USER_SCOPE);
  if (guard.isActive()) guard.before(name);
}

OpProfile profile_operators(const std::function<void()>& body, bool cuda) {
  compat::quiet_kineto();
  impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true, /*profile_memory=*/false,
                              /*with_stack=*/false, /*with_flops=*/true);
  std::set<impl::ActivityType> activities = {impl::ActivityType::CPU};
  if (cuda) activities.insert(impl::ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  try {
    body();
  } catch (...) {
    prof::disableProfiler();
    throw;
  }
  const auto result = prof::disableProfiler();
  OpProfile out;
  for (const auto& e : result->events()) {
    std::string name = e.name();
    if (e.deviceType() != c10::DeviceType::CPU) {
      // The device's own work only: kernels, copies and fills; not its synchronisation waits (CUDA_SYNC) or the
      // device-side spans of user scopes, which overlap the kernels.
      if (device_work(e.activityType()))
        out.kernels.push_back({std::move(name), e.linkedCorrelationId(), e.durationNs()});
      continue;
    }
    if (starts_with(name, "tvie::")) {
      out.markers.push_back({std::move(name), e.startNs()});
      continue;
    }
    if (!starts_with(name, "aten::")) continue;
    ProfiledOp x;
    x.name = std::move(name);
    x.thread = e.startThreadId();
    x.start_ns = e.startNs();
    x.end_ns = e.endNs();
    x.correlation = e.correlationId();
    x.flops = static_cast<double>(e.flops());
    if (e.hasShapes())
      for (const auto& s : e.shapes()) x.shapes.push_back(s);
    if (e.hasTypes())
      for (const auto& t : e.dtypes()) x.dtypes.push_back(t);
    out.ops.push_back(std::move(x));
  }
  std::sort(out.markers.begin(), out.markers.end(),
            [](const ProfiledMarker& a, const ProfiledMarker& b) { return a.start_ns < b.start_ns; });
  return out;
}

OpNesting nest_operators(std::vector<ProfiledOp>& ops) {
  std::sort(ops.begin(), ops.end(), [](const ProfiledOp& a, const ProfiledOp& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;  // the enclosing operator first
  });
  const size_t n = ops.size();
  OpNesting s;
  s.parent.assign(n, -1);
  s.leaf.assign(n, true);
  s.unit.assign(n, false);
  s.under_unit.assign(n, false);
  s.flops_above.assign(n, false);
  s.inside_attention.assign(n, -1);
  s.owner.assign(n, OpClass::elementwise);
  s.top.assign(n, -1);
  std::vector<int> unit_of(n, -1);  // the unit enclosing it (or itself)
  std::vector<size_t> stack;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = ops[i];
    while (!stack.empty() && (ops[stack.back()].thread != e.thread || ops[stack.back()].end_ns <= e.start_ns))
      stack.pop_back();
    const OpClass own = classify_operator(e.name);
    s.top[i] = static_cast<int>(i);
    if (!stack.empty()) {
      const size_t p = stack.back();
      s.parent[i] = static_cast<int>(p);
      s.leaf[p] = false;
      s.inside_attention[i] = s.inside_attention[p];
      s.flops_above[i] = s.flops_above[p] || ops[p].flops > 0;
      s.under_unit[i] = s.under_unit[p] || s.unit[p];
      unit_of[i] = unit_of[p];
      s.top[i] = s.top[p];
    }
    s.unit[i] = !s.under_unit[i] && !metadata_only(e.name) && own != OpClass::elementwise;
    if (s.unit[i]) unit_of[i] = static_cast<int>(i);
    if (s.inside_attention[i] < 0 && own == OpClass::attention) s.inside_attention[i] = static_cast<int>(i);
    s.owner[i] = s.inside_attention[i] >= 0 ? OpClass::attention
                 : unit_of[i] >= 0          ? classify_operator(ops[static_cast<size_t>(unit_of[i])].name)
                                            : own;
    stack.push_back(i);
  }
  return s;
}

std::vector<ClassTimes> class_times_in_windows(OpProfile profile, uint64_t start_ns,
                                               const std::vector<uint64_t>& ends_ns, bool device_kernels,
                                               double* unlinked_ms) {
  std::vector<ClassTimes> out(ends_ns.size());
  auto& ops = profile.ops;
  const OpNesting nest = nest_operators(ops);
  const auto window_of = [&](uint64_t t) -> int {
    if (t < start_ns) return -1;
    const auto it = std::lower_bound(ends_ns.begin(), ends_ns.end(), t);
    return it == ends_ns.end() ? -1 : static_cast<int>(it - ends_ns.begin());
  };
  const auto ms = [](double ns) { return ns * 1e-6; };
  const size_t n = ops.size();
  std::vector<int> window(n);
  for (size_t i = 0; i < n; ++i) window[i] = window_of(ops[static_cast<size_t>(nest.top[i])].start_ns);
  if (device_kernels) {
    std::map<uint64_t, size_t> by_correlation;
    for (size_t i = 0; i < n; ++i)
      if (ops[i].correlation != 0) by_correlation[ops[i].correlation] = i;
    double unlinked = 0;
    for (const auto& k : profile.kernels) {
      const auto it = by_correlation.find(k.linked_correlation);
      if (it == by_correlation.end() || window[it->second] < 0) {
        if (it == by_correlation.end()) unlinked += ms(static_cast<double>(k.duration_ns));
        continue;
      }
      out[static_cast<size_t>(window[it->second])][nest.owner[it->second]] += ms(static_cast<double>(k.duration_ns));
    }
    if (unlinked_ms) *unlinked_ms = unlinked;
    return out;
  }
  std::vector<double> children(n, 0.0);  // the time of the operators directly inside each
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(ops[i].end_ns - ops[i].start_ns);
    if (nest.parent[i] >= 0) children[static_cast<size_t>(nest.parent[i])] += d;
  }
  std::vector<double> top_level(out.size(), 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (window[i] < 0) continue;
    const double d = static_cast<double>(ops[i].end_ns - ops[i].start_ns);
    out[static_cast<size_t>(window[i])][nest.owner[i]] += ms(std::max(0.0, d - children[i]));
    if (nest.parent[i] < 0) top_level[static_cast<size_t>(window[i])] += d;
  }
  for (size_t w = 0; w < out.size(); ++w) {
    const double length = static_cast<double>(ends_ns[w] - (w == 0 ? start_ns : ends_ns[w - 1]));
    out[w].other_ms = ms(std::max(0.0, length - top_level[w]));
  }
  return out;
}

ProfiledClassTimes profile_phases_by_class(const std::function<void()>& body, bool device_kernels,
                                           const std::vector<std::string>& phases, const std::string& what) {
  ProfiledClassTimes t;
  OpProfile p;
  try {
    p = profile_operators(body, device_kernels);
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string text = e.what();
    t.unavailable = "the profiler failed: " + text.substr(0, text.find('\n'));
    return t;
  }
  uint64_t start = 0;
  std::vector<uint64_t> ends;
  std::vector<std::string> names;
  const std::string end_of = "tvie::end::";
  for (const auto& m : p.markers) {
    if (m.name == "tvie::start") start = m.start_ns;
    if (m.name.rfind(end_of, 0) == 0) ends.push_back(m.start_ns), names.push_back(m.name.substr(end_of.size()));
  }
  if (start == 0 || ends.empty()) {
    t.unavailable = "the profiler recorded none of the phase marks";
    return t;
  }
  const auto windows = class_times_in_windows(p, start, ends, device_kernels, &t.unlinked_kernel_ms);
  for (size_t w = 0; w < windows.size(); ++w)
    for (size_t k = 0; k < phases.size() && k < 2; ++k) {
      if (names[w] != phases[k]) continue;
      ClassTimes& into = k == 0 ? t.forward : t.backward;
      for (size_t c = 0; c < into.by_class_ms.size(); ++c) into.by_class_ms[c] += windows[w].by_class_ms[c];
      into.other_ms += windows[w].other_ms;
    }
  if (!(t.forward.classes_ms() > 0) || (phases.size() > 1 && !(t.backward.classes_ms() > 0))) {
    t.unavailable = device_kernels ? "the profiler recorded no kernels of the operators (CUPTI)"
                                   : "the profiler recorded no operator time";
    return t;
  }
  t.method = "LibTorch's profiler (Kineto" + std::string(device_kernels ? ", CUPTI" : "") + ") over " + what +
             (device_kernels ? ": each kernel's device time, by the class of the operator that launched it"
                             : ": each aten operator's self time on the host, by class");
  return t;
}

}  // namespace tvie::detail
