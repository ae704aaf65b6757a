// LibTorch's profiler (Kineto) run around a piece of work, and what its aten operators are: the class each belongs
// to (matmul, convolution, attention, normalisation, elementwise: the classes the projection uses, tvie/ledger.hpp)
// and how they nest. Two users: counting the work of a workload without a trace (profiled_work, tvie/projection.hpp)
// and timing a training step or inference batch by class (tvie/class_times.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <tvie/class_times.hpp>
#include <tvie/ledger.hpp>

namespace tvie::detail {

struct ProfiledOp {
  std::string name;  // "aten::addmm"
  uint64_t thread = 0, start_ns = 0, end_ns = 0;
  uint64_t correlation = 0;  // the id a device kernel it launched links to
  double flops = 0;          // LibTorch's FLOP formula (mm, addmm, bmm, baddbmm, conv2d, mul, add); 0 else
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
};

struct ProfiledKernel {  // a CUDA kernel (or copy, or fill) as the device ran it
  std::string name;
  uint64_t linked_correlation = 0;  // the operator that launched it (ProfiledOp::correlation); 0: none known
  uint64_t duration_ns = 0;
};

struct ProfiledMarker {  // a user scope the work emitted (mark_profile): its name and when
  std::string name;
  uint64_t start_ns = 0;
};

struct OpProfile {
  std::vector<ProfiledOp> ops;  // aten operators only
  std::vector<ProfiledKernel> kernels;
  std::vector<ProfiledMarker> markers;  // named "tvie::..."
};

// Runs `body` under the profiler: CPU activities with input shapes and FLOP figures, and the device's kernels when
// `cuda` (CUPTI). Quiet unless the user set KINETO_LOG_LEVEL.
OpProfile profile_operators(const std::function<void()>& body, bool cuda = false);

// A zero-length user scope named `name` ("tvie::..."), recorded when a profiler runs; nothing otherwise.
void mark_profile(const std::string& name);

// Operators that only make a new view of their input (or allocate without writing): no kernel, no traffic.
bool metadata_only(const std::string& name);
// The class an operator's kernels belong to, by its name (forward and backward variants alike).
OpClass classify_operator(const std::string& name);

// How the operators nest (sorted by thread, then start, enclosing first: profile_operators' order after
// nest_operators sorts them). A *unit* is the outermost operator of a matmul, convolution, attention or normalisation
// class: what runs inside it is its implementation (aten::linear -> aten::addmm -> aten::copy_ for the bias) and
// belongs to its class; everything inside a scaled-dot-product attention is attention.
struct OpNesting {
  std::vector<int> parent;            // the enclosing operator's index; -1 at the top
  std::vector<bool> leaf;             // encloses no operator
  std::vector<bool> unit;             // the outermost operator of a non-elementwise class
  std::vector<bool> under_unit;       // inside such an operator
  std::vector<bool> flops_above;      // an enclosing operator has a FLOP figure
  std::vector<int> inside_attention;  // the enclosing (or own) attention operator's index; -1 when none
  std::vector<OpClass> owner;         // the class its time belongs to: its attention's, its unit's, else its own
  std::vector<int> top;               // the outermost operator enclosing it (itself at the top)
};
// Sorts `ops` (thread, start, enclosing first) and returns how they nest.
OpNesting nest_operators(std::vector<ProfiledOp>& ops);

// The profile's time by class (tvie/class_times.hpp) in consecutive windows: [start_ns, ends_ns[0]], then up to
// ends_ns[1], and so on; an operator belongs to the window its outermost enclosing operator started in (a backward
// operator on autograd's device thread with the host's backward). `device_kernels`: the kernels' device time, each to
// its launching operator's class and window (kernels of no known operator add to *unlinked_ms); else the operators'
// self times, and each window's host time outside the top-level operators as other_ms.
std::vector<ClassTimes> class_times_in_windows(OpProfile profile, uint64_t start_ns,
                                               const std::vector<uint64_t>& ends_ns, bool device_kernels,
                                               double* unlinked_ms = nullptr);

// Runs `body` under the profiler (`device_kernels`: with CUPTI's kernels, their device time by class) and returns
// each of its phases' time by class, summed over the phase's windows, by phase name. `body` marks its phases:
// mark_profile("tvie::start") first, then mark_profile("tvie::end::NAME") at the end of each phase NAME (a
// StepTimer's marks). Never throws for the profiler: a ProfiledClassTimes with `unavailable` set says what went
// wrong; `method` says how they were measured, with `what` ("one step after the timed ones"). The phases named in
// `phases` fill forward and backward, in that order (one name: forward only).
ProfiledClassTimes profile_phases_by_class(const std::function<void()>& body, bool device_kernels,
                                           const std::vector<std::string>& phases, const std::string& what);

}  // namespace tvie::detail
