// The Chrome trace of compare, train and infer (the Trace Event Format; docs/reports.md, "Trace").
#include <tvie/report.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tvie/dist.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {
using json = nlohmann::json;
}  // namespace

// --- Chrome trace events (the Trace Event Format: "X" complete events, microseconds; "M" metadata names) ---
namespace {

struct TraceTrack {
  int pid = 0;
  std::string name;  // the track's ("process") name
};

json trace_name(const char* kind, int pid, const std::string& name) {
  return {{"name", kind}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}};
}

// The phases in the order a step runs them: gradient averaging comes between backward and the optimizer.
constexpr int kPhasesInTimeOrder[] = {kPhaseData, kPhaseForward, kPhaseBackward, kPhaseCommunication, kPhaseOptimizer};

// Every timed step's phases, back to back from the step's start (the marks that time them are consecutive);
// with data parallelism, each bucket's all-reduce on a second row, placed from the end of backward.
void add_training_events(json& events, const std::vector<double>& step_start_ms,
                         const std::vector<std::vector<double>>& step_phases_ms, int64_t first_step,
                         const std::string& timer, const TraceTrack& track, const RankSteps* buckets = nullptr,
                         const std::vector<int64_t>& bucket_bytes = {}) {
  events.push_back(trace_name("process_name", track.pid, track.name));
  events.push_back(trace_name("thread_name", track.pid, "timed steps (" + timer + ")"));
  if (buckets)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", track.pid},
                      {"tid", 1},
                      {"args", {{"name", "all-reduce buckets"}}}});
  for (size_t i = 0; i < step_phases_ms.size() && i < step_start_ms.size(); ++i) {
    double at = step_start_ms[i], backward_end = at;
    const auto& phases = step_phases_ms[i];
    const int64_t step = first_step + static_cast<int64_t>(i);
    for (int p : kPhasesInTimeOrder) {
      const auto index = static_cast<size_t>(p);
      if (index >= phases.size()) continue;
      const double ms = phases[index];
      if (p == kPhaseCommunication && ms == 0 && !buckets) continue;  // no data parallelism
      events.push_back({{"name", phase_name(p)},
                        {"cat", "training"},
                        {"ph", "X"},
                        {"pid", track.pid},
                        {"tid", 0},
                        {"ts", at * 1e3},
                        {"dur", ms * 1e3},
                        {"args", {{"step", step}}}});
      at += ms;
      if (p == kPhaseBackward) backward_end = at;
    }
    if (!buckets || i >= buckets->buckets.size()) continue;
    for (size_t b = 0; b < buckets->buckets[i].size(); ++b) {
      const auto& span = buckets->buckets[i][b];
      json args = {{"step", step}, {"bucket", static_cast<int64_t>(b)}};
      if (b < bucket_bytes.size()) args["bytes"] = bucket_bytes[b];
      events.push_back({{"name", cat("all-reduce bucket ", b)},
                        {"cat", "communication"},
                        {"ph", "X"},
                        {"pid", track.pid},
                        {"tid", 1},
                        {"ts", (backward_end + span.start_ms) * 1e3},
                        {"dur", span.ms * 1e3},
                        {"args", std::move(args)}});
    }
  }
}

void add_training_events(json& events, const TrainingResult& t, const TraceTrack& track) {
  add_training_events(events, t.step_start_ms, t.step_phases_ms, t.ledger_steps + t.warmup_steps + 1, t.timer, track);
}

void add_inference_events(json& events, const InferenceResult& r, const TraceTrack& track, int64_t batch_size) {
  events.push_back(trace_name("process_name", track.pid, track.name));
  events.push_back(trace_name("thread_name", track.pid, "timed batches (" + r.timer + ")"));
  for (size_t i = 0; i < r.latency_ms.size() && i < r.batch_start_ms.size(); ++i)
    events.push_back({{"name", "batch"},
                      {"cat", "inference"},
                      {"ph", "X"},
                      {"pid", track.pid},
                      {"tid", 0},
                      {"ts", r.batch_start_ms[i] * 1e3},
                      {"dur", r.latency_ms[i] * 1e3},
                      {"args", {{"batch", static_cast<int64_t>(i) + 1}, {"batch_size", batch_size}}}});
}

std::string trace_document(json events, const RunContext& context, const std::string& workload) {
  std::string command;
  for (const auto& a : context.argv) command += (command.empty() ? "" : " ") + a;
  if (!context.config_file.empty()) {  // what the command line's --config set, as the JSON report's context says
    command += " (" + context.config_file + ":";
    for (const auto& [option, value] : context.config) command += " --" + option + " " + value;
    command += ")";
  }
  const json doc = {{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ms"},
                    {"otherData",
                     {{"tvie_version", context.tvie_version},
                      {"torch_version", context.torch_version},
                      {"device", context.device},
                      {"workload", workload},
                      {"command", command},
                      {"time_origin",
                       "each track's first timed step or batch at 0, on its timer's clock; tracks are separate runs "
                       "(or ranks), their times are not on one clock"}}}};
  return doc.dump(1);
}

}  // namespace

std::string to_trace_string(const CompareReport& r) {
  json events = json::array();
  add_training_events(events, r.training, {0, "training: " + r.workload});
  add_inference_events(events, r.inference, {1, "inference: " + r.workload + " (" + to_string(r.inference.dtype) + ")"},
                       r.settings.infer.batch_size);
  return trace_document(std::move(events), r.context, r.workload);
}

std::string to_trace_string(const TrainReport& r) {
  json events = json::array();
  if (r.distributed && !r.distributed->ranks.empty()) {
    // Data parallelism: one track per rank, each as that rank timed it, with its buckets' all-reduces.
    const auto& d = *r.distributed;
    const auto& t = r.training;
    for (const auto& rank : d.ranks)
      add_training_events(
          events, rank.step_start_ms, rank.step_phases_ms, t.ledger_steps + t.warmup_steps + 1, t.timer,
          {static_cast<int>(rank.rank), cat("training: ", r.workload, " (rank ", rank.rank, " of ", d.world_size, ", ",
                                            d.backend, d.overlap ? ", overlap" : "", ")")},
          &rank, d.bucket_bytes);
  } else {
    add_training_events(events, r.training,
                        {static_cast<int>(r.rank), cat("training: ", r.workload, " (rank ", r.rank, ")")});
  }
  return trace_document(std::move(events), r.context, r.workload);
}

std::string to_trace_string(const InferReport& r) {
  json events = json::array();
  int pid = 0;
  for (const auto& row : r.sweep.rows) {
    if (!row.fits) continue;
    add_inference_events(events, row.result,
                         {pid++, cat("inference: batch ", row.batch_size, ", ", to_string(row.dtype))}, row.batch_size);
  }
  return trace_document(std::move(events), r.context, r.workload);
}

}  // namespace tvie
