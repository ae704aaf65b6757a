// The serving load: Poisson schedule, dynamic batcher (driven by a virtual clock), statistics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "helpers.hpp"

using namespace tvie;

namespace {

// Time moves only when the driver waits or a batch runs.
class VirtualClock : public ServingClock {
 public:
  double now_us() override { return now; }
  void wait_until_us(double t) override {
    REQUIRE(std::isfinite(t));  // the driver never waits for nothing
    now = std::max(now, t);
  }
  double now = 0;
};

struct Run {
  std::vector<RequestRecord> records;
  std::vector<std::vector<int64_t>> batches;
  std::vector<double> batch_starts;
};

// Serves `arrivals` with a batch costing base + per_request * size microseconds.
Run simulate(const std::vector<double>& arrivals, int64_t max_batch, int64_t max_delay_us, double base_us,
             double per_request_us) {
  VirtualClock clock;
  DynamicBatcher batcher(max_batch, max_delay_us);
  Run run;
  run.records = drive_serving(arrivals, batcher, clock, [&](const std::vector<int64_t>& batch) {
    run.batches.push_back(batch);
    run.batch_starts.push_back(clock.now);
    clock.now += base_us + per_request_us * static_cast<double>(batch.size());
  });
  return run;
}

}  // namespace

TEST_CASE("Poisson schedule: fixed seed, same schedule, and a mean gap within 3% of 1/QPS", "[serve]") {
  const auto a = poisson_schedule_s(50.0, 10000, 7), b = poisson_schedule_s(50.0, 10000, 7);
  CHECK(a == b);
  CHECK(poisson_schedule_s(50.0, 10000, 8) != a);
  REQUIRE(a.size() == 10000);
  CHECK(std::is_sorted(a.begin(), a.end()));
  const double mean_gap = a.back() / 10000.0;
  CHECK(std::abs(mean_gap - 1.0 / 50.0) <= 0.03 / 50.0);
}

TEST_CASE("dynamic batcher: never above max_batch, every request answered once", "[serve]") {
  std::vector<double> arrivals_us;
  for (double t : poisson_schedule_s(2000.0, 2000, 3)) arrivals_us.push_back(t * 1e6);  // 2000 QPS
  const auto run = simulate(arrivals_us, 8, 500, 200, 50);                              // a batch of 8 takes 600 us
  std::multiset<int64_t> answered;
  for (const auto& batch : run.batches) {
    CHECK(batch.size() >= 1);
    CHECK(batch.size() <= 8);
    answered.insert(batch.begin(), batch.end());
  }
  REQUIRE(answered.size() == arrivals_us.size());
  for (int64_t i = 0; i < static_cast<int64_t>(arrivals_us.size()); ++i) CHECK(answered.count(i) == 1);
  for (const auto& rec : run.records) {
    CHECK(rec.start_us >= rec.scheduled_us);  // no request starts before it arrives
    CHECK(rec.end_us > rec.start_us);
  }
}

TEST_CASE("dynamic batcher: a batch closes when full or when the oldest has waited max_queue_delay", "[serve]") {
  // Three sparse requests: nobody fills a batch of 16, so the batch closes at oldest + 1000 us.
  const auto sparse = simulate({0, 100, 200}, 16, 1000, 10, 1);
  REQUIRE(sparse.batches.size() == 1);
  CHECK(sparse.batches[0] == std::vector<int64_t>{0, 1, 2});
  CHECK(sparse.batch_starts[0] == 1000);
  CHECK(sparse.records[0].start_us - sparse.records[0].scheduled_us == 1000);  // queue time of the oldest
  // Requests every microsecond with max_batch 4: a batch starts as soon as the 4th arrives.
  const auto dense = simulate({0, 1, 2, 3, 4, 5, 6, 7}, 4, 1000, 2, 0);
  REQUIRE(dense.batches.size() == 2);
  CHECK(dense.batch_starts[0] == 3);
  CHECK(dense.batches[1] == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(dense.batch_starts[1] == 7);
  // The batcher alone: nothing due before the deadline, everything at it.
  DynamicBatcher b(4, 100);
  b.enqueue(0, 10);
  CHECK_FALSE(b.next_batch(109).has_value());
  CHECK(b.deadline_us() == 110);
  CHECK(b.next_batch(110).value() == std::vector<int64_t>{0});
  CHECK(b.waiting() == 0);
}

TEST_CASE("serving statistics equal those of the recorded per-request latencies", "[serve]") {
  auto w = make_zoo_workload("mlp", "tiny");
  ServeSettings s;
  s.scenario = Scenario::server;
  s.target_qps = 2000;
  s.query_count = 200;
  s.max_batch = 8;
  s.max_queue_delay_us = 500;
  s.min_query_count = 100;
  s.min_duration_ms = 0;
  const auto r = measure_serving(*w, s, c10::Device(c10::kCPU));
  REQUIRE(r.answered == 200);
  std::vector<double> latency, queue, compute;
  for (const auto& rec : r.records) {
    latency.push_back((rec.end_us - rec.scheduled_us) / 1e3);
    queue.push_back((rec.start_us - rec.scheduled_us) / 1e3);
    compute.push_back((rec.end_us - rec.start_us) / 1e3);
    CHECK(rec.batch_size <= 8);
  }
  // LoadGen's rule by hand for 200 requests: the p-th percentile is sorted[floor(p x 200)], the largest for p99.9.
  for (auto* v : {&latency, &queue, &compute}) std::sort(v->begin(), v->end());
  CHECK(r.latency_ms.p50 == latency[100]);
  CHECK(r.latency_ms.p90 == latency[180]);
  CHECK(r.latency_ms.p95 == latency[190]);
  CHECK(r.latency_ms.p99 == latency[198]);
  CHECK(r.latency_ms.p999 == latency[199]);
  CHECK(r.latency_ms.min == latency.front());
  CHECK(r.latency_ms.count == 200);
  CHECK(r.queue_ms.p50 == queue[100]);
  CHECK(r.compute_ms.p99 == compute[198]);
  CHECK(r.valid);
  // Throughput from the records: answered requests over first arrival to last answer.
  double first = 1e300, last = 0;
  for (const auto& rec : r.records) {
    first = std::min(first, rec.scheduled_us);
    last = std::max(last, rec.end_us);
  }
  CHECK(r.duration_s == Approx((last - first) / 1e6));
  CHECK(r.achieved_qps == Approx(200.0 / ((last - first) / 1e6)));
  // Validity follows the minimums.
  s.min_query_count = 1000;
  CHECK_FALSE(summarize_serving(r.records, s).valid);
}

TEST_CASE("single-stream and offline scenarios", "[serve]") {
  auto w = make_zoo_workload("gpt", "tiny");
  ServeSettings s;
  s.query_count = 20;
  s.min_query_count = 20;
  s.min_duration_ms = 0;
  s.scenario = Scenario::single_stream;
  const auto single = measure_serving(*w, s, c10::Device(c10::kCPU));
  REQUIRE(single.records.size() == 20);
  CHECK(single.batch_size.max == 1);
  // LoadGen's single stream: a query is issued the instant the previous one is answered (one clock
  // reading), so the queries never overlap and their latencies, back to back, are the run's duration.
  double latency_sum_ms = 0;
  for (size_t i = 0; i < single.records.size(); ++i) {
    const auto& rec = single.records[i];
    if (i > 0) CHECK(rec.scheduled_us == single.records[i - 1].end_us);
    CHECK(rec.start_us == rec.scheduled_us);
    latency_sum_ms += (rec.end_us - rec.scheduled_us) / 1e3;
  }
  CHECK(latency_sum_ms == Approx(single.duration_s * 1e3).epsilon(1e-9));
  CHECK(single.batches == 20);
  CHECK(single.weight_bytes > 0);
  // Offline: every query there at the start, full batches back to back: 8, 8, then the remaining 4.
  s.scenario = Scenario::offline;
  s.max_batch = 8;
  const auto offline = measure_serving(*w, s, c10::Device(c10::kCPU));
  CHECK(offline.answered == 20);
  std::map<int64_t, int64_t> by_batch;
  for (const auto& rec : offline.records) {
    CHECK(rec.scheduled_us == 0);
    ++by_batch[rec.batch_size];
  }
  CHECK(by_batch == std::map<int64_t, int64_t>{{4, 4}, {8, 16}});
  CHECK(offline.batches == 3);
  CHECK(offline.weight_bytes == single.weight_bytes);
  CHECK(parse_scenario("server") == Scenario::server);
  CHECK_THROWS_AS(parse_scenario("batch"), InvalidArgument);
}

TEST_CASE("serving validity: no answers, too few queries, too short, and the exact boundary", "[serve]") {
  ServeSettings s;
  s.min_query_count = 4;
  s.min_duration_ms = 10;
  // Four requests, the first arriving at 0 us and the last answered at exactly 10 ms.
  std::vector<RequestRecord> records;
  for (int64_t i = 0; i < 4; ++i) records.push_back({i, i * 1000.0, i * 1000.0 + 100, i * 1000.0 + 500, 1});
  records.back().end_us = 10000;
  const auto exact = summarize_serving(records, s);
  CHECK(exact.duration_s == Approx(0.010));
  CHECK(exact.valid);  // both minimums met exactly
  CHECK_THAT(exact.validity, Catch::Contains(": valid"));
  s.min_query_count = 5;
  const auto too_few = summarize_serving(records, s);
  CHECK_FALSE(too_few.valid);
  CHECK_THAT(too_few.validity, Catch::Contains("4 requests (minimum 5)") && Catch::Contains("INVALID"));
  s.min_query_count = 4;
  records.back().end_us = 9999;
  const auto too_short = summarize_serving(records, s);
  CHECK_FALSE(too_short.valid);
  CHECK_THAT(too_short.validity, Catch::Contains("(minimum 10 ms)") && Catch::Contains("INVALID"));
  const auto none = summarize_serving({}, s);
  CHECK_FALSE(none.valid);
  CHECK(none.answered == 0);
  CHECK(none.validity == "no request was answered");
}

TEST_CASE("max-QPS search on a real load: the probe rule and the queries per probe", "[serve]") {
  auto w = make_zoo_workload("mlp", "tiny");
  const c10::Device cpu(c10::kCPU);
  ServeSettings base;
  base.scenario = Scenario::server;
  base.max_batch = 8;
  base.max_queue_delay_us = 200;
  base.min_query_count = 5;
  MaxQpsSearch search;
  search.refine_steps = 2;
  // Each probe issues max(min queries, ceil(1.1 x QPS x min duration)) queries; it meets the bound when it
  // is valid and its p99 is within the bound; the sequence of rates follows search_max_qps on those
  // verdicts.
  auto check_search = [&](const MaxQpsResult& r, const ServeSettings& b) {
    std::vector<bool> verdicts;
    for (const auto& p : r.probes) {
      INFO("probe at " << p.target_qps << " QPS: p99 " << p.p99_ms << " ms, " << p.queries << " queries");
      const auto expected = std::max<int64_t>(
          b.min_query_count, static_cast<int64_t>(std::ceil(1.1 * p.target_qps * b.min_duration_ms / 1e3)));
      CHECK(p.queries == expected);
      CHECK(p.meets == (p.valid && p.p99_ms <= r.p99_bound_ms));
      verdicts.push_back(p.meets);
    }
    size_t next = 0;
    std::vector<double> replayed;
    // Halving ends early when the last two probes missed and the p99 fell by less than 10% between them.
    CHECK(r.lowest_qps == Approx(static_cast<double>(b.min_query_count) / b.max_run_s));
    const auto floor_reached = [&] {
      const size_t n = replayed.size();
      return n >= 2 && !r.probes[n - 1].meets && !r.probes[n - 2].meets && r.probes[n - 1].valid &&
             r.probes[n - 1].p99_ms >= 0.9 * r.probes[n - 2].p99_ms;
    };
    const auto bracket = search_max_qps(
        b.target_qps, search.refine_steps,
        [&](double q) {
          replayed.push_back(q);
          return next < verdicts.size() ? static_cast<bool>(verdicts[next++]) : false;
        },
        r.lowest_qps, floor_reached);
    REQUIRE(replayed.size() == r.probes.size());
    for (size_t i = 0; i < replayed.size(); ++i) CHECK(r.probes[i].target_qps == replayed[i]);
    CHECK(r.max_qps == bracket.max_qps);
    CHECK(r.first_miss_qps == bracket.first_miss_qps);
  };
  // A bound nothing meets: the rate halves 8 times from 2000 QPS; the minimum duration sets the counts.
  ServeSettings halving = base;
  halving.target_qps = 2000;
  halving.min_duration_ms = 10;  // sets the counts at the higher rates; the minimum 5 at the lower ones
  search.p99_bound_ms = 1e-6;
  const auto none = find_max_qps(*w, halving, search, cpu);
  // All 9 rates, unless the p99 stopped falling with the rate first (then the last two probes show it).
  CHECK(none.probes.size() <= 9);
  if (!none.latency_floor) CHECK(none.probes.size() == 9);
  if (none.latency_floor) {
    const size_t n = none.probes.size();
    REQUIRE(n >= 2);
    CHECK(none.probes[n - 1].p99_ms >= 0.9 * none.probes[n - 2].p99_ms);
  }
  CHECK(none.max_qps == 0);
  check_search(none, halving);
  // A bound everything meets: the rate doubles 16 times and is never bracketed.
  ServeSettings doubling = base;
  doubling.target_qps = 1e5;
  doubling.min_duration_ms = 0;
  search.p99_bound_ms = 1e6;
  const auto all = find_max_qps(*w, doubling, search, cpu);
  CHECK(all.probes.size() == 17);
  CHECK(all.max_qps == 1e5 * 65536);
  CHECK(all.first_miss_qps == 0);
  CHECK(all.at_max.answered == 5);
  check_search(all, doubling);
}
