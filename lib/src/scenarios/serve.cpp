// Scenario: a serving load. See serve.hpp and docs/metrics.md ("Serving").
#include <tvie/serve.hpp>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "core/compat.hpp"
#include "core/enum_names.hpp"
#include "scenarios/harness.hpp"
#include "scenarios/qps_search.hpp"
#include <tvie/predict.hpp>
#include "core/text.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/infer.hpp>
#include <tvie/log.hpp>

namespace tvie {

namespace {
constexpr detail::EnumTable<Scenario, 3> kScenarios{
    {{Scenario::single_stream, "single-stream"}, {Scenario::server, "server"}, {Scenario::offline, "offline"}}};
}  // namespace

std::string to_string(Scenario scenario) { return detail::name_of(kScenarios, scenario); }

Scenario parse_scenario(const std::string& text, const std::string& field) {
  return detail::parse(kScenarios, text, field);
}

void validate(const ServeSettings& s) {
  if (!(s.target_qps > 0 && std::isfinite(s.target_qps)))
    throw InvalidArgument("serve.target_qps", cat(s.target_qps), "a finite number > 0");
  if (s.max_batch < 1) throw InvalidArgument("serve.max_batch", cat(s.max_batch), "an integer >= 1");
  if (s.max_queue_delay_us < 0)
    throw InvalidArgument("serve.max_queue_delay_us", cat(s.max_queue_delay_us), "an integer >= 0");
  if (s.query_count < 1) throw InvalidArgument("serve.query_count", cat(s.query_count), "an integer >= 1");
  if (s.min_query_count < 0) throw InvalidArgument("serve.min_query_count", cat(s.min_query_count), "an integer >= 0");
  if (s.min_duration_ms < 0) throw InvalidArgument("serve.min_duration_ms", cat(s.min_duration_ms), "an integer >= 0");
  if (!(s.max_run_s > 0 && std::isfinite(s.max_run_s)))
    throw InvalidArgument("serve.max_run_s", cat(s.max_run_s), "a finite number of seconds > 0");
  // A server run lasts about query_count / target_qps: one far past the bound is a typo, not a measurement.
  const double expected_s = static_cast<double>(s.query_count) / s.target_qps;
  if (s.scenario == Scenario::server && !s.max_qps_search && expected_s > s.max_run_s)
    throw InvalidArgument(
        "serve.target_qps", cat(s.target_qps),
        cat("a rate at which ", s.query_count, " requests arrive within ", s.max_run_s,
            " s (--max-run-s; at this rate they take about ", detail::duration_text(expected_s), ")"));
  if (s.max_qps_search) {
    validate(*s.max_qps_search);
    if (s.scenario != Scenario::server)
      throw InvalidArgument("serve.scenario", to_string(s.scenario), "server (--find-max-qps searches its QPS)");
  }
}

std::vector<double> poisson_schedule_s(double qps, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(qps);  // mean 1 / qps
  std::vector<double> times;
  times.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  double t = 0;
  for (int64_t i = 0; i < count; ++i) times.push_back(t += gap(rng));
  return times;
}

DynamicBatcher::DynamicBatcher(int64_t max_batch, int64_t max_queue_delay_us)
    : max_batch_(max_batch), max_delay_us_(static_cast<double>(max_queue_delay_us)) {}

void DynamicBatcher::enqueue(int64_t request, double arrival_us) { queue_.emplace_back(request, arrival_us); }

std::optional<std::vector<int64_t>> DynamicBatcher::next_batch(double now_us) {
  if (queue_.empty()) return std::nullopt;
  const bool full = static_cast<int64_t>(queue_.size()) >= max_batch_;
  if (!full && now_us < deadline_us()) return std::nullopt;
  std::vector<int64_t> batch;
  while (!queue_.empty() && static_cast<int64_t>(batch.size()) < max_batch_) {
    batch.push_back(queue_.front().first);
    queue_.pop_front();
  }
  return batch;
}

double DynamicBatcher::deadline_us() const {
  return queue_.empty() ? std::numeric_limits<double>::infinity() : queue_.front().second + max_delay_us_;
}

std::vector<RequestRecord> drive_serving(const std::vector<double>& arrivals_us, DynamicBatcher& batcher,
                                         ServingClock& clock,
                                         const std::function<void(const std::vector<int64_t>&)>& execute) {
  const auto n = arrivals_us.size();
  std::vector<RequestRecord> records(n);
  size_t next = 0, answered = 0;
  const double inf = std::numeric_limits<double>::infinity();
  while (answered < n) {
    const double now = clock.now_us();
    for (; next < n && arrivals_us[next] <= now; ++next) batcher.enqueue(static_cast<int64_t>(next), arrivals_us[next]);
    if (auto batch = batcher.next_batch(now)) {
      const double start = clock.now_us();
      execute(*batch);
      const double end = clock.now_us();
      for (int64_t r : *batch) {
        auto& rec = records[static_cast<size_t>(r)];
        rec = {r, arrivals_us[static_cast<size_t>(r)], start, end, static_cast<int64_t>(batch->size())};
      }
      answered += batch->size();
      continue;
    }
    // Nothing to run: wait for the next arrival or for the oldest request's delay to run out.
    clock.wait_until_us(std::min(next < n ? arrivals_us[next] : inf, batcher.deadline_us()));
  }
  return records;
}

std::vector<RequestRecord> drive_single_stream(int64_t count, ServingClock& clock,
                                               const std::function<void(const std::vector<int64_t>&)>& execute) {
  // A query is issued at the instant the previous one is answered: one clock reading ends one query and
  // starts the next, so the run is the queries' latencies back to back, with no driver time between them.
  std::vector<RequestRecord> records;
  double start = clock.now_us();
  for (int64_t i = 0; i < count; ++i) {
    execute({i});
    const double end = clock.now_us();
    records.push_back({i, start, start, end, 1});
    start = end;
  }
  return records;
}

ServeResult summarize_serving(const std::vector<RequestRecord>& records, const ServeSettings& settings) {
  ServeResult r;
  r.scenario = settings.scenario;
  r.target_qps = settings.scenario == Scenario::server ? settings.target_qps : 0;
  r.answered = static_cast<int64_t>(records.size());
  r.records = records;
  if (records.empty()) {
    r.validity = "no request was answered";
    return r;
  }
  std::vector<double> latency, queue, compute, batch;
  double first = std::numeric_limits<double>::infinity(), last = 0, batches = 0;
  for (const auto& rec : records) {
    batches += 1.0 / static_cast<double>(std::max<int64_t>(1, rec.batch_size));
    latency.push_back((rec.end_us - rec.scheduled_us) / 1e3);
    queue.push_back((rec.start_us - rec.scheduled_us) / 1e3);
    compute.push_back((rec.end_us - rec.start_us) / 1e3);
    batch.push_back(static_cast<double>(rec.batch_size));
    first = std::min(first, rec.scheduled_us);
    last = std::max(last, rec.end_us);
  }
  r.latency_ms = summarize(latency);
  r.queue_ms = summarize(queue);
  r.compute_ms = summarize(compute);
  r.batch_size = summarize(batch);
  r.batches = std::llround(batches);
  r.duration_s = (last - first) / 1e6;
  r.achieved_qps = r.duration_s > 0 ? static_cast<double>(r.answered) / r.duration_s : 0;
  r.samples_per_s = r.achieved_qps;
  const bool enough_queries = r.answered >= settings.min_query_count;
  const bool long_enough = r.duration_s * 1e3 >= static_cast<double>(settings.min_duration_ms);
  r.valid = enough_queries && long_enough;
  r.validity = cat(r.answered, " requests (minimum ", settings.min_query_count, ") over ", r.duration_s * 1e3,
                   " ms (minimum ", settings.min_duration_ms, " ms): ", r.valid ? "valid" : "INVALID");
  return r;
}

namespace {

class SteadyServingClock final : public ServingClock {
 public:
  SteadyServingClock() : zero_(std::chrono::steady_clock::now()) {}
  double now_us() override {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - zero_).count();
  }
  void wait_until_us(double t_us) override {
    if (std::isfinite(t_us))
      std::this_thread::sleep_until(zero_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double, std::micro>(t_us)));
  }

 private:
  std::chrono::steady_clock::time_point zero_;
};

}  // namespace

namespace {

// The model, and a pool of request data: request i is row i % pool of one batch made up front.
InferenceSession make_serving_session(const Workload& workload, const ServeSettings& settings,
                                      const c10::Device& device) {
  InferSettings infer;
  infer.batch_size = std::max<int64_t>(settings.max_batch, 64);
  infer.dtype = settings.dtype;
  infer.seed = settings.seed;
  if (settings.check_free_memory)
    detail::refuse_beyond_free_memory(predict_inference_memory(workload, infer, device).peak, device,
                                      cat("serving ", workload.name(), " (a request pool of ", infer.batch_size,
                                          " samples, batches up to ", settings.max_batch, ")"),
                                      "lower --max-batch (or --preset, --dtype), or --force runs it anyway");
  // A probe while the copy is built, so that the session knows its weights' bytes (serving_fraction reads them).
  const auto probe = make_memory_probe(device);
  return InferenceSession(workload, infer, device, nullptr, probe.get());
}

ServeResult serve_with(InferenceSession& session, const ServeSettings& settings, const c10::Device& device) {
  const int64_t pool = session.batch().samples;
  auto execute = [&](const std::vector<int64_t>& batch) {
    std::vector<int64_t> rows;
    for (int64_t r : batch) rows.push_back(r % pool);
    session.run_rows(rows);
    synchronize(device);  // the answer exists only when the device is done
  };
  for (int i = 0; i < 3; ++i) execute(std::vector<int64_t>(static_cast<size_t>(settings.max_batch), 0));  // warm-up

  SteadyServingClock clock;
  std::vector<RequestRecord> records;
  switch (settings.scenario) {
    case Scenario::single_stream:
      records = drive_single_stream(settings.query_count, clock, execute);
      break;
    case Scenario::server: {
      std::vector<double> arrivals_us;
      for (double t : poisson_schedule_s(settings.target_qps, settings.query_count, settings.seed))
        arrivals_us.push_back(t * 1e6);
      DynamicBatcher batcher(settings.max_batch, settings.max_queue_delay_us);
      records = drive_serving(arrivals_us, batcher, clock, execute);
      break;
    }
    case Scenario::offline: {
      // Every request is there at the start; the batcher runs full batches back to back.
      DynamicBatcher batcher(settings.max_batch, 0);
      records =
          drive_serving(std::vector<double>(static_cast<size_t>(settings.query_count), 0.0), batcher, clock, execute);
      break;
    }
  }
  ServeResult result = summarize_serving(records, settings);
  result.weight_bytes = session.weight_bytes();
  result.intra_op_threads = at::get_num_threads();
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  result.omp_wait_policy = policy ? policy : "";
  return result;
}

}  // namespace

ServeResult measure_serving(const Workload& workload, const ServeSettings& settings, const c10::Device& device) {
  detail::require(settings.query_count >= 1 && settings.max_batch >= 1, "measure_serving: validated ServeSettings");
  auto session = make_serving_session(workload, settings, device);
  return serve_with(session, settings, device);
}

QpsBracket search_max_qps(double start_qps, int64_t refine_steps, const std::function<bool(double)>& meets,
                          double lowest_qps, const std::function<bool()>& hopeless) {
  return detail::search_max_qps_announcing(start_qps, refine_steps, meets, lowest_qps, hopeless, {}, {});
}

QpsBracket detail::search_max_qps_announcing(double start_qps, int64_t refine_steps,
                                             const std::function<bool(double)>& meets, double lowest_qps,
                                             const std::function<bool()>& hopeless,
                                             const std::function<double(double)>& probe_seconds,
                                             const std::function<void(double, const RestBound&)>& announce) {
  // Bracket: double from the start while the bound holds, or halve until it does (at most
  // kMaxDoublings / kMaxHalvings runs; halving makes runs longer), then bisect between the last pass and
  // the first miss, as LoadGen's peak-performance search does.
  constexpr int kMaxDoublings = 16, kMaxHalvings = 8;
  const auto refine = static_cast<double>(refine_steps);
  // The longest the rest can take after a pass at q with n doublings left, or a miss at q with n halvings left.
  const auto after_pass = [&](double q, int n) {
    double s = refine * probe_seconds(q);
    for (int j = 1; j <= n; ++j) s += probe_seconds(q * std::ldexp(1.0, j));
    return s;
  };
  const auto after_miss = [&](double q, int n) {
    double s = 0, lowest = q;
    for (int j = 1; j <= n && q * std::ldexp(1.0, -j) >= lowest_qps; ++j) {
      lowest = q * std::ldexp(1.0, -j);
      s += probe_seconds(lowest);
    }
    return s + (lowest < q ? refine * probe_seconds(lowest) : 0.0);
  };
  // The bound is worked out only where someone listens and probes have a length.
  const auto say = [&](double q, const std::function<RestBound()>& rest) {
    if (announce && probe_seconds) announce(q, rest());
  };
  QpsBracket b;
  double qps = start_qps;
  say(qps, [&] { return RestBound{after_pass(qps, kMaxDoublings), after_miss(qps, kMaxHalvings)}; });
  if (meets(qps)) {
    b.max_qps = qps;
    for (int i = 0; i < kMaxDoublings && b.first_miss_qps == 0; ++i) {
      qps *= 2;
      say(qps, [&] { return RestBound{after_pass(qps, kMaxDoublings - i - 1), refine * probe_seconds(b.max_qps)}; });
      if (meets(qps))
        b.max_qps = qps;
      else
        b.first_miss_qps = qps;
    }
  } else {
    b.first_miss_qps = qps;
    for (int i = 0; i < kMaxHalvings && b.max_qps == 0 && qps / 2 >= lowest_qps && !(hopeless && hopeless()); ++i) {
      qps /= 2;
      say(qps, [&] { return RestBound{refine * probe_seconds(qps), after_miss(qps, kMaxHalvings - i - 1)}; });
      if (meets(qps))
        b.max_qps = qps;
      else
        b.first_miss_qps = qps;
    }
  }
  if (b.max_qps == 0 || b.first_miss_qps == 0) return b;  // not bracketed
  for (int64_t i = 0; i < refine_steps; ++i) {
    const double mid = (b.max_qps + b.first_miss_qps) / 2;
    say(mid, [&] {
      const double left = static_cast<double>(refine_steps - i - 1) * probe_seconds(b.max_qps);
      return RestBound{left, left};
    });
    if (meets(mid))
      b.max_qps = mid;
    else
      b.first_miss_qps = mid;
  }
  return b;
}

void validate(const MaxQpsSearch& search) {
  if (!(search.p99_bound_ms > 0))
    throw InvalidArgument("serve.p99_bound_ms", cat(search.p99_bound_ms), "a number of milliseconds > 0");
  if (search.refine_steps < 0 || search.refine_steps > 20)
    throw InvalidArgument("serve.refine_steps", cat(search.refine_steps), "an integer in 0..20");
}

MaxQpsResult find_max_qps(const Workload& workload, const ServeSettings& base, const MaxQpsSearch& search,
                          const c10::Device& device) {
  detail::require(base.scenario == Scenario::server && search.p99_bound_ms > 0 && base.target_qps > 0,
                  "find_max_qps: validated settings of the server scenario");
  auto session = make_serving_session(workload, base, device);
  MaxQpsResult r;
  r.p99_bound_ms = search.p99_bound_ms;
  log::Progress progress(cat("max-QPS search (p99 <= ", search.p99_bound_ms, " ms), run"), 0);
  // Halving stops where a probe's min_query_count requests would arrive over more than max_run_s.
  r.lowest_qps = static_cast<double>(std::max<int64_t>(1, base.min_query_count)) / base.max_run_s;
  // As LoadGen: as many queries as validity needs: the minimum count, and enough to fill the minimum duration at
  // this rate, plus 10% so that validity does not hang on the Poisson draw (a larger --queries would make
  // halved-rate probes needlessly long).
  const auto queries_at = [&](double qps) {
    return std::max<int64_t>(
        {1, base.min_query_count,
         static_cast<int64_t>(std::ceil(1.1 * qps * static_cast<double>(base.min_duration_ms) / 1e3))});
  };
  const auto probe_seconds = [&](double qps) { return static_cast<double>(queries_at(qps)) / qps; };
  detail::RestBound rest;  // the longest the search can take after the current probe, by its outcome
  const auto announce = [&](double qps, const detail::RestBound& bound) {
    rest = bound;
    progress.next(cat(qps, " QPS, about ", detail::duration_text(probe_seconds(qps)), "; then at most about ",
                      detail::duration_text(bound.worst_s()), " more"));
  };
  auto probe = [&](double qps) {
    ServeSettings s = base;
    s.target_qps = qps;
    s.query_count = queries_at(qps);
    ServeResult result = serve_with(session, s, device);
    QpsProbe p;
    p.target_qps = qps;
    p.achieved_qps = result.achieved_qps;
    p.queries = result.answered;
    p.p99_ms = result.latency_ms.p99;
    p.valid = result.valid;
    p.meets = result.valid && result.latency_ms.p99 <= search.p99_bound_ms;
    r.probes.push_back(p);
    log::info(cat("  QPS ", qps, ": p99 ", p.p99_ms, " ms, ", p.meets ? "meets" : "misses",
                  " the bound (the search: at most about ", detail::duration_text(rest.after_s(p.meets)), " more)"));
    if (p.meets && qps > r.max_qps) {
      r.max_qps = qps;
      r.at_max = std::move(result);
    }
    return p.meets;
  };
  // Lower rates cannot help once halving the rate leaves the p99 within 10%: the latency is the service time's.
  const auto hopeless = [&] {
    const size_t n = r.probes.size();
    if (n < 2 || r.probes[n - 1].meets || r.probes[n - 2].meets || !r.probes[n - 1].valid) return false;
    r.latency_floor = r.probes[n - 1].p99_ms >= 0.9 * r.probes[n - 2].p99_ms;
    return r.latency_floor;
  };
  const auto bracket = detail::search_max_qps_announcing(base.target_qps, search.refine_steps, probe, r.lowest_qps,
                                                         hopeless, probe_seconds, announce);
  r.first_miss_qps = bracket.first_miss_qps;
  return r;
}

}  // namespace tvie
