// Scenario: a serving load, in process, measured the way MLPerf LoadGen and Triton do.
//
// Requests arrive on a schedule (server: Poisson arrivals at a target QPS from a fixed seed;
// single-stream: the next request when the previous one is answered; offline: all at once), wait in a
// queue, and a dynamic batcher hands them to the model: a batch closes when it holds max_batch requests
// or when its oldest request has waited max_queue_delay_us. Latency counts from the *scheduled* arrival,
// so queueing cannot hide; it splits into queue time (scheduled arrival to batch start) and compute time
// (batch start to end).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/workload.hpp>

namespace tvie {

enum class Scenario { single_stream, server, offline };
std::string to_string(Scenario scenario);
Scenario parse_scenario(const std::string& text, const std::string& field = "serve.scenario");

// --find-max-qps: the highest server-scenario QPS whose run is valid with p99 latency <= the bound.
struct MaxQpsSearch {
  double p99_bound_ms = 10;  // the latency bound
  int64_t refine_steps = 4;  // bisections between the last passing and the first failing QPS
};
void validate(const MaxQpsSearch& search);

struct ServeSettings {
  Scenario scenario = Scenario::server;
  double target_qps = 50;             // server: mean arrival rate of the Poisson process
  int64_t max_batch = 16;             // dynamic batcher: the largest batch
  int64_t max_queue_delay_us = 2000;  // dynamic batcher: a batch closes when its oldest request waited this long
  int64_t query_count = 512;          // requests issued (offline: all at once)
  int64_t min_query_count = 256;      // the run is valid only with at least this many answered requests...
  int64_t min_duration_ms = 2000;     // ...over at least this long (0: no minimum)
  InferenceDtype dtype = InferenceDtype::fp32;
  uint64_t seed = 0;  // arrival schedule and request data
  // server: a run whose requests arrive over more than this (query_count / target_qps) is refused; the QPS search
  // halves no lower than a rate whose probe would take this long.
  double max_run_s = 600;
  // The model and its request pool (a batch of max(max_batch, 64)) refused before they are built when their
  // predicted peak exceeds the device's free memory (PredictedOutOfMemory; TrainSettings::check_free_memory).
  bool check_free_memory = true;
  // run_serve: search the highest server QPS that meets the bound, starting at target_qps (server only).
  std::optional<MaxQpsSearch> max_qps_search;
};
// Also validates max_qps_search and that it is asked of the server scenario.
void validate(const ServeSettings& settings);

// Arrival times in seconds from the start of `count` requests of a Poisson process at `qps`: gaps drawn
// from an exponential distribution of mean 1/qps (std::mt19937_64 seeded with `seed`), so the same seed
// gives the same schedule. The first request arrives after the first gap.
std::vector<double> poisson_schedule_s(double qps, int64_t count, uint64_t seed);

// The dynamic batcher, with time passed in (microseconds): no clock of its own, so tests drive it.
class DynamicBatcher {
 public:
  DynamicBatcher(int64_t max_batch, int64_t max_queue_delay_us);
  void enqueue(int64_t request, double arrival_us);
  // The batch to run at `now_us`, if one is due: the max_batch oldest requests when that many wait, else
  // every waiting request once the oldest has waited max_queue_delay_us. Removes them from the queue.
  std::optional<std::vector<int64_t>> next_batch(double now_us);
  // When the oldest waiting request's delay runs out (only while requests wait).
  double deadline_us() const;
  size_t waiting() const { return queue_.size(); }

 private:
  int64_t max_batch_;
  double max_delay_us_;
  std::deque<std::pair<int64_t, double>> queue_;  // (request, arrival)
};

// What happened to one request (microseconds from the start).
struct RequestRecord {
  int64_t request = 0;
  double scheduled_us = 0;  // when it was scheduled to arrive
  double start_us = 0;      // when its batch started
  double end_us = 0;        // when its batch ended: the answer
  int64_t batch_size = 0;
};

// The clock a serving run reads and waits on: real (steady_clock) or virtual (tests).
class ServingClock {
 public:
  virtual ~ServingClock() = default;
  virtual double now_us() = 0;
  virtual void wait_until_us(double t_us) = 0;
};

// Runs `arrivals_us` (ascending) through the batcher with one worker: `execute(batch)` runs a batch and
// returns when it is done. Every request is answered exactly once; records are in request order.
std::vector<RequestRecord> drive_serving(const std::vector<double>& arrivals_us, DynamicBatcher& batcher,
                                         ServingClock& clock,
                                         const std::function<void(const std::vector<int64_t>&)>& execute);
// single-stream: request i is issued when request i-1 is answered, and runs alone.
std::vector<RequestRecord> drive_single_stream(int64_t count, ServingClock& clock,
                                               const std::function<void(const std::vector<int64_t>&)>& execute);

struct ServeResult {
  Scenario scenario = Scenario::server;
  double target_qps = 0;
  int64_t answered = 0;
  double duration_s = 0;     // first scheduled arrival (or start) to last answer
  double achieved_qps = 0;   // answered / duration_s
  Summary latency_ms;        // scheduled arrival -> answer
  Summary queue_ms;          // scheduled arrival -> batch start
  Summary compute_ms;        // batch start -> batch end
  Summary batch_size;        // over requests (each request counts its batch's size)
  double samples_per_s = 0;  // offline: answered / duration_s
  int64_t batches = 0;       // forward passes run: each request counts 1 / its batch's size
  int64_t weight_bytes = 0;  // the served copy's weights, packs included (InferenceSession::weight_bytes)
  bool valid = false;        // enough requests over enough time
  std::string validity;      // why (not) valid
  std::vector<RequestRecord> records;
  // CPU serving depends on how idle intra-op threads wait between requests (see README, Serving).
  int64_t intra_op_threads = 0;  // at::get_num_threads() during the run
  std::string omp_wait_policy;   // the OMP_WAIT_POLICY environment variable ("" when unset)
};

// Statistics of a run's records (pure): latencies and splits in milliseconds, validity from the minimums.
ServeResult summarize_serving(const std::vector<RequestRecord>& records, const ServeSettings& settings);

// Serves a freshly initialised (seeded) copy of the model on `device` under InferenceMode (settings
// validated first: validate(settings); run_serve in tvie/run.hpp does).
ServeResult measure_serving(const Workload& workload, const ServeSettings& settings, const c10::Device& device);

struct QpsProbe {
  double target_qps = 0, achieved_qps = 0, p99_ms = 0;
  int64_t queries = 0;  // requests issued (and answered) in this run
  bool valid = false, meets = false;
};

struct MaxQpsResult {
  double p99_bound_ms = 0;
  double max_qps = 0;         // highest probed QPS that met the bound (0: none did)
  double first_miss_qps = 0;  // lowest probed QPS above it that missed (0: none missed)
  double lowest_qps = 0;      // halving stops above this rate: a probe below it would run past max_run_s
  // Halving stopped early: the p99 fell by less than 10% when the rate halved, so the service time alone misses
  // the bound and lower rates would only take longer.
  bool latency_floor = false;
  std::vector<QpsProbe> probes;  // in the order run
  ServeResult at_max;            // the run at max_qps
};

// The search itself, over any pass/fail test: from start_qps, double while `meets` (at most 16 times) or
// halve until it does (at most 8 times, never below lowest_qps, and not once `hopeless` says lower rates cannot
// pass), then bisect refine_steps times between the last pass and the first miss. max_qps 0: nothing passed;
// first_miss_qps 0: nothing failed.
struct QpsBracket {
  double max_qps = 0;
  double first_miss_qps = 0;
};
QpsBracket search_max_qps(double start_qps, int64_t refine_steps, const std::function<bool(double)>& meets,
                          double lowest_qps = 0, const std::function<bool()>& hopeless = {});

// Starts at base.target_qps, doubles (or halves) until the bound is bracketed, then bisects. One model
// copy serves every probe; each probe issues what validity needs: base.min_query_count requests, or
// 1.1 x enough to last base.min_duration_ms at its rate if that is more (base.query_count is not used).
MaxQpsResult find_max_qps(const Workload& workload, const ServeSettings& base, const MaxQpsSearch& search,
                          const c10::Device& device);

}  // namespace tvie
