// What a Linear's three products hold above their results, in bytes: the forward x W^T (+ b), the input gradient
// dy W and the weight gradient dy^T x. The trace asks the kernels' scratch in this form (ForwardTrace::linear_scratch)
// and the CPU rules answer in it (predict/onednn_scratch.hpp, predict/onednn_bookings.hpp).
#pragma once

#include <cstdint>

namespace tvie::trace {

struct LinearProducts {
  int64_t forward = 0, input_grad = 0, weight_grad = 0;
};

}  // namespace tvie::trace
