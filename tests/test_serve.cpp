// The serving load: Poisson schedule, dynamic batcher (driven by a virtual clock), statistics.
#include <catch2/catch.hpp>

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

TEST_CASE("Poisson schedule: fixed seed, same schedule; mean gap within 3% of 1/QPS", "[serve]") {
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
  const auto r = run_serving(*w, s, c10::Device(c10::kCPU));
  REQUIRE(r.answered == 200);
  std::vector<double> latency, queue, compute;
  for (const auto& rec : r.records) {
    latency.push_back((rec.end_us - rec.scheduled_us) / 1e3);
    queue.push_back((rec.start_us - rec.scheduled_us) / 1e3);
    compute.push_back((rec.end_us - rec.start_us) / 1e3);
    CHECK(rec.batch_size <= 8);
  }
  const auto expected = summarize(latency);
  CHECK(r.latency_ms.p50 == expected.p50);
  CHECK(r.latency_ms.p90 == expected.p90);
  CHECK(r.latency_ms.p95 == expected.p95);
  CHECK(r.latency_ms.p99 == expected.p99);
  CHECK(r.latency_ms.p999 == expected.p999);
  CHECK(r.queue_ms.p50 == summarize(queue).p50);
  CHECK(r.compute_ms.p99 == summarize(compute).p99);
  CHECK(r.valid);
  CHECK(r.achieved_qps > 0);
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
  const auto single = run_serving(*w, s, c10::Device(c10::kCPU));
  CHECK(single.batch_size.max == 1);
  CHECK(single.queue_ms.max == 0);  // issued when the previous one is answered
  s.scenario = Scenario::offline;
  s.max_batch = 8;
  const auto offline = run_serving(*w, s, c10::Device(c10::kCPU));
  CHECK(offline.batch_size.max == 8);
  CHECK(offline.answered == 20);
  CHECK(parse_scenario("server") == Scenario::server);
  CHECK_THROWS_AS(parse_scenario("batch"), InvalidArgument);
}
