// `tvie infer`: batch x precision sweep with accuracy against fp32. See infer.hpp and docs/metrics.md.
#include <algorithm>
#include <map>
#include <optional>

#include <tvie/infer.hpp>

#include "core/compat.hpp"
#include "scenarios/harness.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

InferSettings row_settings(const InferSweepSettings& s, int64_t batch, InferenceDtype dtype) {
  InferSettings one;
  one.batch_size = batch;
  one.steps = s.steps;
  one.warmup_steps = s.warmup_steps;
  one.dtype = dtype;
  one.seed = s.seed;
  one.cuda_graph = s.cuda_graph;
  one.check_free_memory = s.check_free_memory;
  return one;
}

OutputAgreement compare_outputs(const torch::Tensor& reference, const torch::Tensor& output) {
  c10::InferenceMode inference_mode;
  const auto ref = reference.to(torch::kCPU, torch::kFloat32);
  const auto out = output.to(torch::kCPU, torch::kFloat32);
  if (ref.sizes() != out.sizes())
    throw Error(cat("tvie: outputs of different shapes cannot be compared: ", ref.sizes(), " vs ", out.sizes()));
  OutputAgreement a;
  if (ref.numel() == 0) return a;
  const auto diff = (out - ref).abs();
  a.max_abs_error = diff.max().item<double>();
  a.mean_abs_error = diff.mean().item<double>();
  a.reference_mean_abs = ref.abs().mean().item<double>();
  // Top-1 only where the last dimension holds scores to choose from (classes, vocabulary).
  if (ref.dim() >= 1 && ref.size(-1) > 1) {
    const auto same = ref.argmax(-1).eq(out.argmax(-1));
    a.rows = same.numel();
    a.top1_agreement = same.to(torch::kFloat64).mean().item<double>();
  }
  return a;
}

void validate(const InferSweepSettings& s, const c10::Device& device) {
  if (s.batch_sizes.empty())
    throw InvalidArgument("infer_sweep.batch_sizes", "", "a list of integers >= 1, e.g. 1,8,64");
  // A row per batch size (in the order given): a size listed twice would be a second row of the same figures.
  for (size_t i = 1; i < s.batch_sizes.size(); ++i)
    if (std::find(s.batch_sizes.begin(), s.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i), s.batch_sizes[i]) !=
        s.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i)) {
      std::string list;
      for (int64_t b : s.batch_sizes) list += (list.empty() ? "" : ",") + cat(b);
      throw InvalidArgument("infer_sweep.batch_sizes", list, "batch sizes each listed once");
    }
  if (s.dtypes.empty())
    throw InvalidArgument("infer_sweep.dtypes", "", "a list of fp32, fp16, bf16, int8, fp8, int8-weight-only");
  if (s.cpu_memory_limit_mb < 0)
    throw InvalidArgument("infer_sweep.cpu_memory_limit_mb", cat(s.cpu_memory_limit_mb),
                          "an integer >= 0 (0: no limit)");
  if (s.cpu_memory_limit_mb > 0 && !device.is_cpu())
    throw InvalidArgument("infer_sweep.cpu_memory_limit_mb", cat(s.cpu_memory_limit_mb),
                          cat("0 on ", device.str(), " (the limit emulates a smaller device on the CPU only)"));
  // Each row is an InferSettings; its errors are reported under the sweep's field names.
  try {
    for (int64_t b : s.batch_sizes) validate(row_settings(s, b, s.dtypes.front()));
    for (auto dtype : s.dtypes) validate(row_settings(s, s.batch_sizes.front(), dtype), device);
  } catch (const InvalidArgument& e) {
    static const std::map<std::string, std::string> renamed = {{"infer.batch_size", "infer_sweep.batch_sizes"},
                                                               {"infer.dtype", "infer_sweep.dtypes"},
                                                               {"infer.steps", "infer_sweep.steps"},
                                                               {"infer.warmup_steps", "infer_sweep.warmup_steps"},
                                                               {"infer.cuda_graph", "infer_sweep.cuda_graph"}};
    const auto it = renamed.find(e.field());
    if (it == renamed.end()) throw;
    throw InvalidArgument(it->second, e.value(), e.accepted());
  }
}

InferSweepResult measure_inference_sweep(const Workload& workload, const InferSweepSettings& s,
                                         const c10::Device& device, const torch::nn::Module* weights) {
  detail::require(!s.batch_sizes.empty() && !s.dtypes.empty(),
                  "measure_inference_sweep: validated settings (validate(InferSweepSettings, device) first)");
  InferSweepResult result;
  result.cpu_memory_limit_bytes = s.cpu_memory_limit_mb * 1024 * 1024;
  const bool needs_reference =
      s.accuracy_vs_fp32 &&
      std::any_of(s.dtypes.begin(), s.dtypes.end(), [](InferenceDtype d) { return d != InferenceDtype::fp32; });
  const bool lists_fp32 = std::find(s.dtypes.begin(), s.dtypes.end(), InferenceDtype::fp32) != s.dtypes.end();

  auto run_row = [&](const InferSettings& one, torch::Tensor* output) {
    InferSweepRow row;
    row.batch_size = one.batch_size;
    row.dtype = one.dtype;
    // The emulated limit counts from what is live before the row (the fp32 reference output included).
    std::optional<ScopedCpuMemoryLimit> limit;
    if (result.cpu_memory_limit_bytes > 0) limit.emplace(result.cpu_memory_limit_bytes);
    try {
      row.result = measure_inference(workload, one, device, weights, output);
      if (result.memory_counter.empty()) result.memory_counter = row.result.memory_counter;
      if (result.timer.empty()) result.timer = row.result.timer;
    } catch (const OutOfMemory& e) {
      row.fits = false;
      row.does_not_fit = e.what();
    } catch (const c10::OutOfMemoryError&) {
      row.fits = false;
      row.does_not_fit =
          cat("inference ", workload.name(), " at batch ", one.batch_size, " does not fit on ", device.str());
    }
    if (!row.fits) {
      if (limit) row.does_not_fit += cat(" (emulated limit: ", s.cpu_memory_limit_mb, " MiB for tensors)");
      log::info(row.does_not_fit);
      detail::release_cached_memory(device);
    }
    return row;
  };

  log::Progress progress("infer sweep", static_cast<long long>(s.batch_sizes.size() * s.dtypes.size()));
  for (int64_t batch : s.batch_sizes) {
    std::vector<InferSweepRow> rows(s.dtypes.size());
    std::vector<bool> done(s.dtypes.size(), false);
    torch::Tensor reference;  // fp32 output on this batch's inputs
    if (needs_reference) {
      if (lists_fp32) {
        const auto i =
            static_cast<size_t>(std::find(s.dtypes.begin(), s.dtypes.end(), InferenceDtype::fp32) - s.dtypes.begin());
        progress.next(cat("batch ", batch, ", fp32"));
        rows[i] = run_row(row_settings(s, batch, InferenceDtype::fp32), &reference);
        done[i] = true;
      } else {
        auto reference_only = row_settings(s, batch, InferenceDtype::fp32);
        reference_only.steps = 1;  // untimed in effect: only its output is kept
        reference_only.warmup_steps = 0;
        run_row(reference_only, &reference);
      }
    }
    for (size_t i = 0; i < s.dtypes.size(); ++i) {
      if (done[i]) continue;
      torch::Tensor output;
      progress.next(cat("batch ", batch, ", ", to_string(s.dtypes[i])));
      rows[i] = run_row(row_settings(s, batch, s.dtypes[i]), &output);
      if (rows[i].fits && s.dtypes[i] != InferenceDtype::fp32 && reference.defined()) {
        rows[i].has_accuracy = true;
        rows[i].accuracy = compare_outputs(reference, output);
      }
    }
    for (auto& row : rows) result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace tvie
