// Scenario: training and inference of the same model, side by side.
#include <tvie/compare.hpp>

#include "compat.hpp"
#include <tvie/device.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {

namespace {

void log_training(const Workload& workload, const CompareSettings& settings, const std::string& device) {
  const auto& t = settings.train;
  log::info(cat("training ", workload.name(), " on ", device, ": batch ", t.batch_size, ", ", to_string(t.precision),
                ", checkpoint ", checkpoint_to_string(t.checkpoint_every), ", ", Trainer::kLedgerSteps, " ledger + ",
                t.warmup_steps, " warm-up + ", t.steps, " timed steps"));
}

// The parts every report shares: the run's context, its settings and the model's facts. Validates the
// training settings for the device and logs what will run.
template <typename Report>
c10::Device begin_report(Report& report, const Workload& workload, const CompareSettings& settings,
                         std::vector<std::string> argv) {
  const c10::Device device = resolve_device(settings.device, "device");
  validate(settings.train, device);
  report.context = make_run_context(device, std::move(argv));
  report.settings = settings;
  report.workload = workload.name();
  report.facts = workload.facts();
  log_training(workload, settings, report.context.device);
  return device;
}

}  // namespace

TrainReport run_train(const Workload& workload, const CompareSettings& settings, std::vector<std::string> argv,
                      Communicator* comm, const DistSettings* dist) {
  TrainReport report;
  const c10::Device device = begin_report(report, workload, settings, std::move(argv));
  report.training = run_training(workload, settings.train, device, nullptr, comm, dist);
  return report;
}

TrainReport run_train(const CompareSettings& settings, std::vector<std::string> argv, Communicator* comm,
                      const DistSettings* dist) {
  validate(settings);
  auto workload = make_zoo_workload(settings.model, settings.preset);
  return run_train(*workload, settings, std::move(argv), comm, dist);
}

CompareReport run_compare(const Workload& workload, const CompareSettings& settings_in, std::vector<std::string> argv) {
  validate(settings_in.infer);
  CompareReport report;
  const c10::Device device = begin_report(report, workload, settings_in, std::move(argv));
  CompareSettings settings = settings_in;
  if (settings.infer_dtype_auto) {
    const auto choice = native_inference_dtype(device);
    settings.infer.dtype = choice.dtype;
    report.settings.infer.dtype = choice.dtype;
    report.inference_dtype_choice = "auto: " + choice.reason;
    log::info(cat("inference dtype ", report.inference_dtype_choice));
  }
  std::shared_ptr<torch::nn::Module> trained;
  report.training = run_training(workload, settings.train, device, &trained);
  log::info(cat("inference ", workload.name(), " (", to_string(settings.infer.dtype),
                " copy of the trained weights): batch ", settings.infer.batch_size, ", 1 ledger + ",
                settings.infer.warmup_steps, " warm-up + ", settings.infer.steps, " timed batches"));
  report.inference = run_inference(workload, settings.infer, device, trained.get());

  auto ratio = [](double a, double b) { return b != 0 ? a / b : 0.0; };
  report.peak_memory_ratio =
      ratio(static_cast<double>(report.training.memory.peak), static_cast<double>(report.inference.memory.peak));
  report.parameter_memory_ratio =
      ratio(static_cast<double>(report.training.memory.parameters),
            static_cast<double>(report.inference.memory.parameters + report.inference.memory.packed_weights));
  report.throughput_ratio = ratio(report.inference.samples_per_s, report.training.samples_per_s);
  return report;
}

InferReport run_infer(const Workload& workload, const InferSweepSettings& settings, const std::string& device_spec,
                      std::vector<std::string> argv) {
  const c10::Device device = resolve_device(device_spec, "device");
  validate(settings, device);
  InferReport report;
  report.context = make_run_context(device, std::move(argv));
  report.workload = workload.name();
  report.facts = workload.facts();
  report.settings = settings;
  log::info(cat("inference sweep of ", workload.name(), " on ", report.context.device, ": ",
                settings.batch_sizes.size(), " batch sizes x ", settings.dtypes.size(), " precisions, 1 ledger + ",
                settings.warmup_steps, " warm-up + ", settings.steps, " timed batches each"));
  report.sweep = run_inference_sweep(workload, settings, device);
  return report;
}

CompareReport run_compare(const CompareSettings& settings, std::vector<std::string> argv) {
  validate(settings);
  auto workload = make_zoo_workload(settings.model, settings.preset);
  return run_compare(*workload, settings, std::move(argv));
}

}  // namespace tvie
