#include <tvie/workload.hpp>

#include <map>

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/ledger.hpp>

namespace tvie {

Batch slice_batch(const Batch& batch, int64_t begin, int64_t count) {
  Batch out;
  out.input = batch.input.narrow(0, begin, count);
  out.target = batch.target.narrow(0, begin, count);
  out.samples = count;
  out.tokens = batch.samples > 0 ? batch.tokens / batch.samples * count : 0;
  return out;
}

int64_t batch_bytes(const Batch& batch) {
  int64_t bytes = 0;
  for (const auto* t : {&batch.input, &batch.target})
    if (t->defined()) bytes += static_cast<int64_t>(t->nbytes());
  return bytes;
}

void copy_weights(const torch::nn::Module& source, torch::nn::Module& destination) {
  torch::NoGradGuard no_grad;
  auto copy_all = [](const torch::OrderedDict<std::string, torch::Tensor>& from,
                     const torch::OrderedDict<std::string, torch::Tensor>& to, const char* what) {
    if (from.size() != to.size())
      throw InvalidArgument("weights", cat(from.size(), " ", what), cat(to.size(), " ", what, " of the same names"));
    for (const auto& item : to) {
      const torch::Tensor* src = from.find(item.key());
      if (src == nullptr || src->sizes() != item.value().sizes())
        throw InvalidArgument("weights", item.key(), cat("a ", what, " of that name and shape in the source module"));
      item.value().copy_(*src);  // Tensor handles share storage: this writes the module's weight
    }
  };
  copy_all(source.named_parameters(), destination.named_parameters(), "parameters");
  copy_all(source.named_buffers(), destination.named_buffers(), "buffers");
}

ActivationEstimate Workload::estimate_activations(const ActivationQuery& query) const {
  (void)query;
  return {};
}

}  // namespace tvie
