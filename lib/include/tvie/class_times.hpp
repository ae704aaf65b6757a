// Where a training step's (or an inference batch's) time goes, by operator class (matmul, convolution, attention,
// normalisation, elementwise: the classes `tvie plan` projects, tvie/projection.hpp). Measured with LibTorch's profiler
// over one more step after the timed ones (TrainSettings::profile_classes; a batch: InferSettings::profile_classes),
// never over a timed one: the profiler adds its own cost to every operator. On the CPU: each aten operator's self time,
// given to the class of the outermost matrix, convolution, attention or normalisation operator enclosing it (an addmm's
// bias copy is matmul time), else its own; what the phase spends outside any operator (the autograd engine, the
// optimizer's loop) is `other_ms`. On CUDA: the device's kernel times, each given to the class of the operator that
// launched it. Used as shares: `tvie plan` splits a phase's measured time (from the unprofiled steps) among the classes
// in these proportions, and calibrates each class against its own projection (tvie/plan.hpp, ClassCalibration).
#pragma once

#include <array>
#include <string>

#include <tvie/ledger.hpp>

namespace tvie {

struct ClassTimes {
  std::array<double, kOpClassCount> by_class_ms{};  // see above: self time (CPU) or kernel time (CUDA) per class
  double other_ms = 0;                              // the phase's host time outside every operator (CPU)
  double classes_ms() const {
    double s = 0;
    for (double v : by_class_ms) s += v;
    return s;
  }
  double& operator[](OpClass c) { return by_class_ms[static_cast<size_t>(c)]; }
  double operator[](OpClass c) const { return by_class_ms[static_cast<size_t>(c)]; }
};

struct ProfiledClassTimes {
  std::string method;             // how they were measured; empty: not measured
  std::string unavailable;        // why not, when asked for and not measured
  ClassTimes forward;             // the forward and loss of every micro-batch (checkpointed blocks run without grad)
  ClassTimes backward;            // every micro-batch's backward (with the recomputation of checkpointed blocks)
  double unlinked_kernel_ms = 0;  // CUDA: kernels the profiler linked to no operator (not in the classes)
  bool measured() const { return !method.empty(); }
};

}  // namespace tvie
