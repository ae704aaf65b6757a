// Calibration (tvie/plan.hpp): a measured run's times against their projection on the card it ran on, a factor
// per mode, per phase of a training step and per class of operators, applied to the plan's cards.
#include <tvie/plan.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "projection/projected_time.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/workload.hpp>

namespace tvie {
using namespace projected_time;

namespace {

using json = nlohmann::json;

[[noreturn]] void bad_report(const std::string& source, const std::string& why, const std::string& accepted) {
  throw InvalidArgument("from", cat(source, ": ", why), accepted);
}

}  // namespace

CalibrationFactor calibration_factor(const ProjectedTime& p, double measured_s) {
  CalibrationFactor f;
  f.measured_s = measured_s, f.projected_s = p.estimate_s, f.bound_s = p.bound_s, f.launch_s = p.launch_s;
  if (!p.supported) f.unsupported = p.unsupported;
  if (!p.supported || !(p.estimate_s > 0) || !(measured_s > 0)) return f;
  f.factor = f.work_factor = f.launch_factor = measured_s / p.estimate_s;
  f.below_bound = measured_s < p.bound_s;
  const double launch = p.launch_s, work = p.estimate_s - p.launch_s;
  if (launch >= work && measured_s > work)
    f.work_factor = 1, f.launch_factor = (measured_s - work) / launch;
  else if (work > launch && measured_s > launch)
    f.launch_factor = 1, f.work_factor = (measured_s - launch) / work;
  return f;
}

std::string describe_correction(const CalibrationFactor& f) {
  if (!(f.factor > 0)) return "";
  const auto x = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "x%.3g", v);
    return std::string(text);
  };
  if (f.work_factor == 1 && f.launch_factor != 1)
    return "the kernel overhead " + x(f.launch_factor) + " (launch-bound)";
  if (f.launch_factor == 1 && f.work_factor != 1) return "the operators' time " + x(f.work_factor);
  return "both " + x(f.factor);
}

ProjectedTime calibrated(ProjectedTime t, const CalibrationFactor& f) {
  if (!(f.factor > 0) || !t.supported) return t;
  const double work = t.estimate_s - t.launch_s;
  for (auto& c : t.by_class) c.estimate_s *= f.work_factor;
  t.optimizer.estimate_s *= f.work_factor;
  t.launch_s *= f.launch_factor;
  t.estimate_s = std::max(t.bound_s, work * f.work_factor + t.launch_s);
  return t;
}

MeasuredPhases split_training_step(double step_s, double data_s, double forward_s, double backward_s,
                                   double optimizer_s, double communication_s) {
  MeasuredPhases m;
  const double sum = data_s + forward_s + backward_s + optimizer_s + communication_s;
  if (!(step_s > 0) || !(forward_s > 0) || !(backward_s > 0) || !(optimizer_s > 0) || !(sum > 0)) return m;
  // What the step spends outside communication, shared among the three in proportion to their medians.
  const double computing = step_s * (sum - communication_s) / sum;
  const double three = forward_s + backward_s + optimizer_s;
  m.forward_s = computing * forward_s / three;
  m.backward_s = computing * backward_s / three;
  m.optimizer_s = computing * optimizer_s / three;
  return m;
}

namespace {

enum class StepPart { forward, backward, optimizer };

// `work` with one phase's part left: the forward, the backward or the optimizer's step.
StepWork part_of(const StepWork& work, StepPart part) {
  StepWork w = work;
  if (part != StepPart::forward) w.forward = PhaseWork{};
  if (part != StepPart::backward) w.backward = PhaseWork{};
  if (part != StepPart::optimizer) w.optimizer = OpWork{};
  return w;
}

bool has_work(const OpWork& w) { return w.flops > 0 || w.bytes > 0 || w.weight_elements > 0 || w.kernels > 0; }

// `phase` (a part_of the step: forward or backward) with one class's work left.
StepWork class_of(const StepWork& phase, OpClass c) {
  StepWork w = phase;
  w.forward = PhaseWork{}, w.backward = PhaseWork{}, w.optimizer = OpWork{};
  w.forward[c] = phase.forward[c];
  w.backward[c] = phase.backward[c];
  return w;
}

bool has_work(const StepWork& phase, OpClass c) { return has_work(phase.forward[c]) || has_work(phase.backward[c]); }

ClassCalibration calibrate_classes(const StepWork& phase, const Accelerator& card, double phase_s,
                                   const ClassTimes& times) {
  ClassCalibration out;
  double matched = 0;  // the profiled time of the classes that have projected work
  for (int i = 0; i < kOpClassCount; ++i)
    if (has_work(phase, static_cast<OpClass>(i)) && times.by_class_ms[static_cast<size_t>(i)] > 0)
      matched += times.by_class_ms[static_cast<size_t>(i)];
  if (!(matched > 0) || !(phase_s > 0)) return out;
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto c = static_cast<OpClass>(i);
    const double ms = times.by_class_ms[static_cast<size_t>(i)];
    if (!has_work(phase, c) || !(ms > 0)) continue;
    out.by_class[static_cast<size_t>(i)] =
        calibration_factor(project_time(class_of(phase, c), card), phase_s * ms / matched);
  }
  return out;
}

}  // namespace

// One phase projected and calibrated: class by class where `classes` has factors (a class without one takes the
// phase's), else the phase as one.
ProjectedTime projected_time::calibrated_phase(const StepWork& phase, const Accelerator& card,
                                               const CalibrationFactor& factor, const ClassCalibration& classes) {
  const ProjectedTime whole = project_time(phase, card);
  if (!classes.any() || !whole.supported) return calibrated(whole, factor);
  ProjectedTime t;
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto c = static_cast<OpClass>(i);
    if (!has_work(phase, c)) continue;
    const auto& own = classes.by_class[static_cast<size_t>(i)];
    add_time(t, calibrated(project_time(class_of(phase, c), card), own.factor > 0 ? own : factor));
  }
  for (size_t c = 0; c < t.by_class.size(); ++c) t.by_class[c].memory_bound = whole.by_class[c].memory_bound;
  return t;
}

ProjectedTime calibrated_training_step(const StepWork& work, const Accelerator& card, const CalibrationFactor& step,
                                       const PhaseCalibration& phases) {
  const ProjectedTime whole = project_time(work, card);
  // A card that cannot project the step cannot project its parts either (each has a subset of its classes' work).
  if (!phases.complete() || !whole.supported) return calibrated(whole, step);
  // Each phase never below its own bound, then summed: the step's bound becomes the phases' bounds summed (no
  // lower than the step's single roofline, where a class is memory-bound in one phase and compute-bound in another).
  ProjectedTime t = calibrated_phase(part_of(work, StepPart::forward), card, phases.forward, phases.forward_classes);
  add_time(t, calibrated_phase(part_of(work, StepPart::backward), card, phases.backward, phases.backward_classes));
  add_time(t, calibrated(project_time(part_of(work, StepPart::optimizer), card), phases.optimizer));
  // by_class[].memory_bound would be each class's in the forward; the whole step's is the one to show.
  for (size_t c = 0; c < t.by_class.size(); ++c) t.by_class[c].memory_bound = whole.by_class[c].memory_bound;
  t.optimizer.memory_bound = whole.optimizer.memory_bound;
  return t;
}

PhaseCalibration calibrate_training_phases(const StepWork& work, const Accelerator& card, const MeasuredPhases& m) {
  PhaseCalibration c;
  const StepWork forward = part_of(work, StepPart::forward), backward = part_of(work, StepPart::backward);
  c.forward = calibration_factor(project_time(forward, card), m.forward_s);
  c.backward = calibration_factor(project_time(backward, card), m.backward_s);
  c.optimizer = calibration_factor(project_time(part_of(work, StepPart::optimizer), card), m.optimizer_s);
  c.forward_classes = calibrate_classes(forward, card, m.forward_s, m.forward_classes);
  c.backward_classes = calibrate_classes(backward, card, m.backward_s, m.backward_classes);
  return c;
}

Calibration calibration_from_report(const std::string& text, const std::string& source,
                                    const std::optional<Accelerator>& host) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    bad_report(source, detail::first_line(e.what()), "a tvie JSON report (compare, train or decode, --json)");
  }
  const std::string accepted =
      "a tvie report of a zoo model (compare, train or decode --json) from a catalog card or this host";
  Calibration c;
  c.source = source;
  try {
    c.workload = j.at("model").at("name").get<std::string>();
    c.device = j.at("context").at("device").get<std::string>();
  } catch (const json::exception&) {
    bad_report(source, "no model.name or context.device", accepted);
  }
  const std::optional<ZooSpec> spec = zoo_spec_of_name(c.workload);
  if (!spec) bad_report(source, cat("model '", c.workload, "' is not a zoo model"), accepted);
  std::unique_ptr<Workload> workload;
  try {
    workload = make_zoo_workload(spec->model, spec->preset, spec->shape);
  } catch (const InvalidArgument&) {
    bad_report(source, cat("model '", c.workload, "' is not a zoo model"), accepted);
  }
  // The card it ran on.
  Accelerator card;
  const auto& context = j.at("context");
  if (context.contains("gpu")) {
    const std::string name = context.at("gpu").value("name", std::string());
    const Accelerator* found = catalog_card_of_device(name, context.at("gpu").value("memory_bytes", 0.0));
    if (found == nullptr)
      bad_report(source, cat("device '", name, "' is not one card of the catalog"), "a report from a catalog card");
    card = *found;
    c.architecture = card.architecture;
  } else {
    if (!host) bad_report(source, "a CPU report, and this machine's CPU has no class in the catalog", accepted);
    const HostInfo here = describe_host();
    if (context.value("cpu_model", std::string()) != here.cpu_model)
      bad_report(source, cat("a CPU report from '", context.value("cpu_model", std::string()), "'"),
                 "a CPU report made on this machine (its clock and cores are this machine's)");
    // The same CPU under another oneDNN ISA limit ran other kernels (a report without the key predates it: taken
    // as made without a limit).
    const std::string limit = context.value("onednn_isa_limit", std::string());
    if (limit != here.onednn_isa_limit)
      bad_report(source, cat("a CPU report made with ONEDNN_MAX_CPU_ISA='", limit, "'"),
                 cat("a CPU report made under this process's ONEDNN_MAX_CPU_ISA ('", here.onednn_isa_limit,
                     "': the same kernels)"));
    card = *host;
    c.architecture = "host";
  }
  std::optional<TrainSettings> train;
  std::optional<InferSettings> infer;
  std::optional<MeasuredGeneration> generation;
  double step_s = 0, latency_s = 0;
  std::optional<MeasuredPhases> phases;
  ClassTimes inference_classes;
  // A mode's time by class, from one profiled step or batch (--profile-classes): `phase` of its time_by_class.
  const auto profiled = [](const json& mode) {
    return mode.contains("time_by_class") && mode.at("time_by_class").value("measured", false);
  };
  const auto class_times = [](const json& mode, const char* phase) {
    ClassTimes ct;
    for (int i = 0; i < kOpClassCount; ++i)
      ct.by_class_ms[static_cast<size_t>(i)] =
          mode.at("time_by_class").at(phase).value(std::string(to_string(static_cast<OpClass>(i))) + "_ms", 0.0);
    return ct;
  };
  const auto read_train = [&](const json& t) {
    TrainSettings s;
    const auto& k = t.at("settings");
    s.batch_size = k.at("batch_size").get<int64_t>();
    s.accumulate = k.value("accumulate", int64_t{1});
    s.optimizer = parse_optimizer(k.at("optimizer").get<std::string>(), "from");
    s.precision = parse_train_precision(k.at("precision").get<std::string>(), "from");
    s.checkpoint_every = parse_checkpoint(k.value("checkpoint", std::string("none")), "from");
    s.clip_grad_norm = k.value("clip_grad_norm", 0.0);
    return s;
  };
  try {
    if (j.contains("training") && j.at("training").contains("step_ms")) {
      train = read_train(j.at("training"));
      step_s = j.at("training").at("step_ms").at("mean").get<double>() / 1000;
      // The phases' medians (reports without them, and CUDA-graph steps timed whole, calibrate the step only).
      const auto& t = j.at("training");
      const bool graph =
          t.contains("cuda_graph") && t.at("cuda_graph").is_object() && t.at("cuda_graph").value("enabled", false);
      if (t.contains("phases") && !graph) {
        const auto median = [&](const char* phase) {
          const auto& ph = t.at("phases");
          return ph.contains(phase) ? ph.at(phase).value("p50_ms", 0.0) / 1000 : 0.0;
        };
        MeasuredPhases m = split_training_step(step_s, median("data"), median("forward"), median("backward"),
                                               median("optimizer"), median("communication"));
        // The forward's and backward's time by class, from one profiled step (--profile-classes).
        if (profiled(t)) {
          m.forward_classes = class_times(t, "forward");
          m.backward_classes = class_times(t, "backward");
        }
        if (m.forward_s > 0) phases = m;
      }
    }
    if (j.contains("inference") && j.at("inference").contains("latency_ms")) {
      InferSettings s;
      s.batch_size = j.at("inference").at("settings").at("batch_size").get<int64_t>();
      s.dtype = parse_inference_dtype(j.at("inference").at("settings").at("dtype").get<std::string>(), "from");
      infer = s;
      latency_s = j.at("inference").at("latency_ms").at("mean").get<double>() / 1000;
      if (profiled(j.at("inference"))) inference_classes = class_times(j.at("inference"), "batch");
    }
    // tvie decode's "decoding", or compare's "generation" (the trained weights served as a generation).
    const char* generated = j.contains("decoding") ? "decoding" : "generation";
    if (j.contains(generated) && j.at(generated).contains("ttft_ms")) {
      const auto& d = j.at(generated);
      const auto& k = d.at("settings");
      DecodeSettings s;
      s.batch_size = k.at("batch_size").get<int64_t>();
      s.dtype = parse_inference_dtype(k.at("dtype").get<std::string>(), "from");
      s.prompt_tokens = k.at("prompt_tokens").get<int64_t>();
      s.new_tokens = k.at("new_tokens").get<int64_t>();
      generation = measured_generation(s, d.at("ttft_ms").at("mean").get<double>(),
                                       s.new_tokens > 1 ? d.at("tpot_ms").at("mean").get<double>() : 0.0);
      if (profiled(d)) {
        generation->prefill_classes = class_times(d, "prefill");
        if (s.new_tokens > 1) generation->decoding_classes = class_times(d, "decoding");
      }
    }
  } catch (const json::exception& e) {
    bad_report(source, detail::first_line(e.what()), accepted);
  }
  Calibration m =
      calibration_from_measurement(*workload, card, train, step_s, infer, latency_s, phases, inference_classes);
  if (generation) {
    try {
      calibrate_generation(m, *workload, card, *generation);
    } catch (const InvalidArgument& e) {  // a model without a KV-cached forward, or a prompt it cannot hold
      bad_report(source, detail::first_line(e.what()), accepted);
    }
  }
  m.source = c.source;
  m.device = c.device;
  m.workload = c.workload;
  m.architecture = c.architecture;
  if (m.training.factor == 0 && m.inference.factor == 0 && m.prefill.factor == 0 && m.decoding.factor == 0)
    bad_report(source, "no training step, inference latency or decoding time to calibrate with", accepted);
  return m;
}

Calibration calibration_from_measurement(const Workload& workload, const Accelerator& card,
                                         const std::optional<TrainSettings>& train, double step_s,
                                         const std::optional<InferSettings>& infer, double latency_s,
                                         const std::optional<MeasuredPhases>& phases,
                                         const ClassTimes& inference_classes) {
  Calibration c;
  c.workload = workload.name();
  c.card_id = card.id;
  c.architecture = card.id == "host" ? "host" : card.architecture;
  if (train && step_s > 0) {
    const StepWork work = training_step_work(workload, *train, trace_device(card));
    c.training = calibration_factor(project_time(work, card), step_s);
    if (phases) c.training_phases = calibrate_training_phases(work, card, *phases);
  }
  if (infer && latency_s > 0) {
    const StepWork work = inference_batch_work(workload, *infer, trace_device(card));
    c.inference = calibration_factor(project_time(work, card), latency_s);
    if (c.inference.factor > 0) c.inference_classes = calibrate_classes(work, card, latency_s, inference_classes);
  }
  return c;
}

MeasuredGeneration measured_generation(const DecodeSettings& decoded, double ttft_ms_mean, double tpot_ms_mean) {
  MeasuredGeneration g;
  g.infer.batch_size = decoded.batch_size;
  g.infer.dtype = decoded.dtype;
  g.infer.seed = decoded.seed;
  g.prompt_tokens = decoded.prompt_tokens;
  g.new_tokens = decoded.new_tokens;
  g.ttft_s = ttft_ms_mean / 1000;
  if (decoded.new_tokens > 1) g.tpot_s = tpot_ms_mean / 1000;
  return g;
}

void calibrate_generation(Calibration& into, const Workload& workload, const Accelerator& card,
                          const MeasuredGeneration& m) {
  validate(m.infer);
  if (m.prompt_tokens < 1 || m.new_tokens < 1)
    throw InvalidArgument("generation", cat(m.prompt_tokens, " prompt and ", m.new_tokens, " new tokens"),
                          "at least one of each");
  PlanSettings asked;
  asked.new_tokens = m.new_tokens;
  asked.prompt_tokens = m.prompt_tokens;
  generation_prompt_tokens(workload, asked);  // a zoo gpt or llama whose context holds the prompt and new tokens
  std::map<int64_t, StepWork> works;
  const auto work = [&](int64_t cached) -> const StepWork& {
    auto it = works.find(cached);
    if (it == works.end())
      it = works
               .emplace(cached,
                        decoding_work(workload, m.infer, cached == 0 ? m.prompt_tokens : 1, cached, trace_device(card)))
               .first;
    return it->second;
  };
  const GenerationTime g = project_generation(work, m.prompt_tokens, m.new_tokens, card);
  into.prefill = calibration_factor(g.prefill, m.ttft_s);
  into.prefill_classes = calibrate_classes(work(0), card, m.ttft_s, m.prefill_classes);
  if (m.new_tokens > 1) {
    const double steps = static_cast<double>(m.new_tokens - 1);
    into.decoding = calibration_factor(per_step(g.decoding, steps), m.tpot_s);
    // By class against the mean step's work (the work is affine in the cached positions: the middle step's).
    const StepWork& first = work(m.prompt_tokens);
    const StepWork mean = steps > 1 ? between(first, work(m.prompt_tokens + m.new_tokens - 2), 0.5) : first;
    into.decoding_classes = calibrate_classes(mean, card, m.tpot_s, m.decoding_classes);
  }
}

}  // namespace tvie
