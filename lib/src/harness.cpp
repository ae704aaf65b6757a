#include "harness.hpp"

#include "compat.hpp"

namespace tvie::detail {

void convert_floating(torch::nn::Module& module, const c10::Device& device, c10::ScalarType dtype) {
  module.to(device);
  torch::NoGradGuard no_grad;
  for (auto tensors : {module.parameters(), module.buffers()})
    for (auto& t : tensors)
      if (t.is_floating_point() && t.scalar_type() != dtype) t.set_data(t.to(dtype));
}

}  // namespace tvie::detail
