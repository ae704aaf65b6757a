// The HTML report: its charts from real runs (what each chart holds, read from the page's text), the SVG helpers,
// the --html option's validation, and the [browser] test that opens the pages in headless Chromium.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "report/svg_chart.hpp"

using namespace tvie;
namespace fs = std::filesystem;
using tvie::test::read_text;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The <svg class="chart" ...> ... </svg> of chart `id` ("" when the page has none).
std::string chart(const std::string& html, const std::string& id) {
  const auto start = html.find("<svg class=\"chart\" data-chart=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

// The names of the series a chart holds.
std::vector<std::string> series_of(const std::string& svg) {
  std::vector<std::string> names;
  const std::regex re("class=\"series\" data-series=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("SVG helpers: escaping, round ticks, value labels", "[html]") {
  CHECK(svg::escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  CHECK(svg::linear_ticks(0, 4.3) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(svg::linear_ticks(0, 1) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  CHECK(svg::log_ticks(1, 100) == std::vector<double>{1, 2, 5, 10, 20, 50, 100});
  CHECK(svg::log_ticks(1e-4, 10) == std::vector<double>{1e-4, 1e-3, 1e-2, 1e-1, 1, 10});
  // Byte axes on a log scale: round binary sizes (an all-reduce sweep's 8 B .. 128 MiB: every 5 octaves).
  CHECK(svg::log_byte_ticks(1, 1 << 30) == std::vector<double>{1, 32, 1024, 32768, 1 << 20, 32 << 20, 1 << 30});
  CHECK(svg::log_byte_ticks(1024, 1 << 20) == std::vector<double>{1024, 4096, 16384, 65536, 262144, 1 << 20});
  CHECK(svg::log_byte_ticks(8, 64) == std::vector<double>{8, 16, 32, 64});
  for (double t : svg::log_byte_ticks(8, 128 << 20))
    CHECK(svg::format_value(t, svg::Format::bytes).find('.') == std::string::npos);  // "32 KiB", never "9.766 KiB"
  CHECK(svg::format_value(3 * 1024 * 1024, svg::Format::bytes) == "3 MiB");
  CHECK(svg::format_value(1536, svg::Format::bytes) == "1.5 KiB");
  CHECK(svg::format_value(2500, svg::Format::milliseconds) == "2.5 s");
  CHECK(svg::format_value(0.25, svg::Format::milliseconds) == "0.25 ms");
  CHECK(svg::format_value(1250000, svg::Format::number) == "1.25M");
}

TEST_CASE("compare --html: the ledger measured and predicted, memory over time, phases, latency CDF, the table",
          "[html]") {
  test::TempDir dir;
  const auto html_path = dir.path / "compare.html";
  const auto json_path = dir.path / "compare.json";
  const auto r = test::run_cli("compare --model gpt --preset tiny --steps 3 --warmup 1 --device cpu -q --html " +
                               html_path.string() + " --json " + json_path.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const std::string html = read_text(html_path);
  const auto json = nlohmann::json::parse(read_text(json_path));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // nothing fetched: the SVG namespace only
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);

  const auto ledger = chart(html, "ledger");
  REQUIRE_FALSE(ledger.empty());
  const auto categories = series_of(ledger);
  for (const char* c : {"parameters", "gradients", "optimizer state", "saved activations / working set"})
    CHECK(std::find(categories.begin(), categories.end(), c) != categories.end());
  for (const char* bar : {"training, measured", "training, predicted", "inference, measured", "inference, predicted"})
    CHECK(ledger.find(bar) != std::string::npos);

  const auto timeline = chart(html, "memory-over-time");
  CHECK(series_of(timeline) == std::vector<std::string>{"training step", "inference batch"});
  for (const char* phase : {"forward", "backward", "optimizer"})
    CHECK(timeline.find("data-band=\"" + std::string(phase) + "\"") != std::string::npos);
  CHECK(series_of(chart(html, "phases")) == std::vector<std::string>{"data", "forward", "backward", "optimizer"});
  CHECK(series_of(chart(html, "latency-cdf")) == std::vector<std::string>{"training step", "inference batch"});
  for (const char* p : {">train p50<", ">train p99<", ">infer p50<", ">infer p99<"})
    CHECK(chart(html, "latency-cdf").find(p) != std::string::npos);
  // gpt generates by default: its memory, measured beside predicted, category by category.
  const auto generation = chart(html, "generation-memory");
  CHECK(series_of(generation) == std::vector<std::string>{"parameters", "kv_cache", "working_set", "prompt", "other"});
  for (const char* bar : {">measured<", ">predicted<"}) CHECK(generation.find(bar) != std::string::npos);
  // The page's summary leads with serving as a generation, the full-sequence forward (score) after it.
  const auto served = html.find("serving as a generation ("),
             score = html.find("one forward of whole sequences (score)");
  CHECK(served != std::string::npos);
  CHECK(score != std::string::npos);
  CHECK(served < score);
  // Every chart declares as many series as it holds; axes carry their units.
  CHECK(count(html, "<svg class=\"chart\"") == 6);
  CHECK(ledger.find("bytes (allocated)") != std::string::npos);
  CHECK(timeline.find("live bytes above the baseline") != std::string::npos);
  // The table is the report's ledger, column for column as the CSV writes it: its rows hold the run's bytes (read
  // back from the same run's JSON), and the footer holds the context.
  CHECK(html.find("<thead><tr><th>category</th><th>training_bytes</th><th>training_predicted_bytes</th>"
                  "<th>inference_bytes</th><th>inference_predicted_bytes</th></tr></thead>") != std::string::npos);
  const auto row = [&](const std::string& category, const std::string& key, bool predicted_inference) {
    const auto cell = [](const nlohmann::json& v) { return "<td>" + std::to_string(v.get<int64_t>()) + "</td>"; };
    return "<tr><td>" + category + "</td>" + cell(json["training"]["memory"][key]) +
           cell(json["training"]["memory_predicted"][key]) + cell(json["inference"]["memory"][key]) +
           (predicted_inference ? cell(json["inference"]["memory_predicted"][key]) : "<td></td>") + "</tr>";
  };
  CHECK(html.find(row("peak", "peak", true)) != std::string::npos);
  CHECK(html.find(row("activations", "activations", true)) != std::string::npos);
  CHECK(count(html.substr(html.find("data-table=\"ledger\"")), "<tr><td>") == 12);  // a row per category
  CHECK(html.find("<dt>command</dt>") != std::string::npos);
  CHECK(html.find("compare --model gpt") != std::string::npos);
}

TEST_CASE("plan --html labels every figure projected, infer --html marks what does not fit", "[html]") {
  test::TempDir dir;
  const auto plan = test::run_cli("plan --model gpt --preset small --cards a100-80gb-sxm,t4 --no-host -q --html " +
                                  (dir.path / "plan.html").string());
  INFO(plan.out);
  REQUIRE(plan.exit_code == 0);
  const std::string p = read_text(dir.path / "plan.html");
  CHECK(count(p, "<svg class=\"chart\"") == 3);
  for (const char* id : {"plan-training-step", "plan-inference-latency", "plan-inference-qps"})
    CHECK(chart(p, id).find("projected (roofline bound .. estimate), not measured") != std::string::npos);
  CHECK(chart(p, "plan-inference-latency").find("t4 has no bf16_tflops peak") != std::string::npos);
  // With generation: the time per output token and the new tokens per second, per card.
  const auto generation =
      test::run_cli("plan --model gpt --preset small --new-tokens 8 --cards a100-80gb-sxm,t4 --no-host -q --html " +
                    (dir.path / "plan-generation.html").string());
  INFO(generation.out);
  REQUIRE(generation.exit_code == 0);
  const std::string g = read_text(dir.path / "plan-generation.html");
  CHECK(count(g, "<svg class=\"chart\"") == 5);
  for (const char* id : {"plan-generation-tpot", "plan-generation-tokens"}) {
    CHECK(chart(g, id).find("projected (roofline bound .. estimate), not measured") != std::string::npos);
    CHECK(chart(g, id).find("t4 has no bf16_tflops peak") != std::string::npos);
  }
  CHECK(series_of(chart(g, "plan-generation-tokens")) == std::vector<std::string>{"tokens/s"});
  // Uncalibrated: no calibration table. Calibrated by the H200 report: what it measured and what each mode and
  // training phase corrects, beside the plan.
  CHECK(count(p, "data-table=\"calibration\"") == 0);
  const auto calibrated = test::run_cli(
      "plan --model gpt --preset gpt2-small --cards h100-sxm --no-host -q --from " + std::string(TVIE_SOURCE_DIR) +
      "/docs/results/gpu-h200/compare-gpt2-small.json --html " + (dir.path / "plan-calibrated.html").string());
  INFO(calibrated.out);
  REQUIRE(calibrated.exit_code == 0);
  const std::string k = read_text(dir.path / "plan-calibrated.html");
  REQUIRE(count(k, "data-table=\"calibration\"") == 1);
  const std::string table = k.substr(k.find("data-table=\"calibration\""));
  const std::string rows = table.substr(0, table.find("</table>"));
  // The header, the step, its three phases, the inference batch, and a row under its phase for each operator class
  // the run's profile (--profile-classes) timed.
  const auto h200 =
      nlohmann::json::parse(read_text(fs::path(TVIE_SOURCE_DIR) / "docs/results/gpu-h200/compare-gpt2-small.json"));
  int classes = 0;
  const std::vector<std::pair<std::string, std::string>> phases = {
      {"training", "forward"}, {"training", "backward"}, {"inference", "batch"}};
  for (const auto& [mode, phase] : phases)
    for (const auto& [name, ms] : h200.at(mode).at("time_by_class").at(phase).items()) classes += ms.get<double>() > 0;
  CHECK(classes == 12);  // matmul, attention, normalization, elementwise in each
  CHECK(count(rows, "<tr>") == 6 + classes);
  for (const char* row :
       {"training: forward", "training: backward", "training: optimizer", "inference batch",
        "training: forward: matmul", "inference batch: elementwise", "the operators&#39; time x", "NVIDIA H200"})
    CHECK(k.find(row) != std::string::npos);
  // A CPU report with one more step and batch profiled (--profile-classes): a row per class under its phase.
  if (local_host_accelerator()) {
    const auto report = (dir.path / "compare.json").string();
    const auto compare = test::run_cli(
        "compare --model gpt --preset tiny --batch 4 --steps 2 --warmup 1 --device cpu "
        "--profile-classes -q --json " +
        report);
    REQUIRE(compare.exit_code == 0);
    const auto by_class = test::run_cli("plan --model gpt --preset tiny --batch 4 --cards t4 -q --from " + report +
                                        " --html " + (dir.path / "plan-by-class.html").string());
    INFO(by_class.out);
    REQUIRE(by_class.exit_code == 0);
    const std::string c = read_text(dir.path / "plan-by-class.html");
    for (const char* row : {"training: forward: matmul", "training: backward: matmul", "training: forward: attention",
                            "inference batch: matmul"})
      CHECK(c.find(row) != std::string::npos);
    CHECK(c.find("training: forward: convolution") == std::string::npos);  // gpt has none: no row
  }

  const auto infer = test::run_cli(
      "infer --model gpt --preset tiny --batch 1,256 --dtype fp32 --steps 2 --warmup 0 --device cpu "
      "--cpu-memory-limit-mb 8 -q --html " +
      (dir.path / "infer.html").string());
  INFO(infer.out);
  REQUIRE(infer.exit_code == 0);
  const std::string i = read_text(dir.path / "infer.html");
  CHECK(series_of(chart(i, "sweep-throughput")) == std::vector<std::string>{"fp32"});
  CHECK(chart(i, "sweep-throughput").find("fp32: does not fit") != std::string::npos);
  CHECK(chart(i, "sweep-peak").find("data-points=\"1\"") != std::string::npos);  // only batch 1 fits
}

TEST_CASE("serve --html: latency against offered load from the max-QPS search, and allreduce --html: bus bandwidth",
          "[html]") {
  test::TempDir dir;
  // A bound every probe meets: the search doubles 16 times from 1e5 QPS (as the command-line test of the search).
  const auto serve = test::run_cli(
      "serve --model mlp --find-max-qps --p99-ms 100000 --qps 100000 --min-queries 5 --min-duration-ms 0 "
      "--device cpu -q --html " +
      (dir.path / "serve.html").string());
  INFO(serve.out);
  REQUIRE(serve.exit_code == 0);
  const std::string v = read_text(dir.path / "serve.html");
  const std::string load = chart(v, "serve-load");
  CHECK(series_of(load) == std::vector<std::string>{"p99 of a run at that load", "the bound"});
  CHECK(load.find("data-series=\"p99 of a run at that load\" data-points=\"17\"") != std::string::npos);
  CHECK(load.find("offered load (QPS)") != std::string::npos);
  CHECK(load.find("p99 latency (ms)") != std::string::npos);
  CHECK(series_of(chart(v, "serve-latency-cdf")) == std::vector<std::string>{"latency (arrival to answer)",
                                                                             "queue (arrival to batch start)",
                                                                             "compute (batch start to end)"});
  // Without the search: the latency distribution only.
  const auto fixed = test::run_cli(
      "serve --model mlp --qps 400 --queries 50 --min-queries 5 --min-duration-ms 0 "
      "--device cpu -q --html " +
      (dir.path / "serve-fixed.html").string());
  REQUIRE(fixed.exit_code == 0);
  CHECK(chart(read_text(dir.path / "serve-fixed.html"), "serve-load").empty());

  const auto ar =
      test::run_cli("allreduce --min-bytes 8 --max-bytes 1048576 --factor 4 --iters 2 --warmup 1 -q --html " +
                    (dir.path / "allreduce.html").string());
  INFO(ar.out);
  REQUIRE(ar.exit_code == 0);
  const std::string a = chart(read_text(dir.path / "allreduce.html"), "allreduce-busbw");
  CHECK(series_of(a) == std::vector<std::string>{"out-of-place", "in-place"});
  CHECK(a.find("data-series=\"in-place\" data-points=\"9\"") != std::string::npos);  // 8 B .. 512 KiB by 4
  // The message-size axis from 8 B to 512 KiB, ticked at every even power of two (1 KiB among them).
  for (const char* tick : {">16 B<", ">64 B<", ">256 B<", ">1 KiB<", ">4 KiB<", ">16 KiB<", ">64 KiB<", ">256 KiB<"})
    CHECK(a.find(tick) != std::string::npos);
  CHECK(a.find("bus bandwidth (GB/s)") != std::string::npos);
  CHECK(read_text(dir.path / "allreduce.html").find("One rank: nothing crosses a link, so busbw is 0") !=
        std::string::npos);
}

TEST_CASE("html output: a bad path is refused before anything runs, exit 2, nothing written", "[html]") {
  test::TempDir dir;
  const auto r = test::run_cli("compare --model gpt --preset tiny --device cpu --html " +
                               (dir.path / "missing" / "r.html").string());
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("html") != std::string::npos);
  CHECK(r.out.find("ledger steps done") == std::string::npos);  // nothing ran
  CHECK(fs::is_empty(dir.path));
}

// --- the browser --------------------------------------------------------------------------------------------

TEST_CASE("HTML reports load in headless Chromium: no console message, every chart with its series, screenshots",
          "[browser]") {
  const std::string chromium = test::chromium_path();
  if (chromium.empty()) {
    if (test::browser_required()) FAIL("TVIE_REQUIRE_BROWSER=1 but no chromium is installed");
    TVIE_SKIP("needs chromium (apt-get install chromium; scripts/setup.sh installs it)");
  }
  test::TempDir dir;
  const fs::path shots = fs::path(TVIE_TEST_BINARY).parent_path().parent_path() / "browser-screenshots";
  fs::create_directories(shots);
  const std::vector<std::pair<std::string, std::string>> reports = {
      {"compare", "compare --model gpt --preset tiny --steps 3 --warmup 1 --device cpu"},
      {"train", "train --model mlp --preset tiny --steps 3 --warmup 1 --device cpu"},
      {"infer", "infer --model mlp --preset tiny --batch 1,4,16 --dtype fp32,bf16 --steps 2 --warmup 0 --device cpu"},
      {"serve", "serve --model mlp --preset tiny --qps 400 --queries 200 --device cpu"},
      {"decode", "decode --preset tiny --device cpu"},
      {"plan", "plan --model gpt --preset small --new-tokens 8"},
      {"serve-load",
       "serve --model mlp --find-max-qps --p99-ms 100000 --qps 100000 --min-queries 5 --min-duration-ms 0 "
       "--device cpu"},
      {"allreduce", "allreduce --min-bytes 8 --max-bytes 65536 --factor 4 --iters 2 --warmup 1"},
  };
  for (const auto& [name, args] : reports) {
    INFO(name);
    const fs::path page = dir.path / (name + ".html");
    const auto made = test::run_cli(args + " -q --html " + page.string());
    INFO(made.out);
    REQUIRE(made.exit_code == 0);
    const std::string html = read_text(page);
    const int charts = count(html, "<svg class=\"chart\"");
    CHECK(charts >= 1);

    const std::string flags =
        " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + (dir.path / "profile").string() +
        " --enable-logging=stderr --v=0";
    const auto dom = test::run_command(chromium + flags + " --dump-dom file://" + page.string());
    REQUIRE(dom.exit_code == 0);
    // The page's own check ran (it writes its verdict on <body>): every chart holds the series it declares,
    // and no script error happened; and Chromium logged no console message.
    const std::regex body("<body([^>]*)>");
    std::smatch tag;
    REQUIRE(std::regex_search(dom.out, tag, body));
    const std::string attributes = tag[1];
    INFO("<body" << attributes << ">");
    CHECK(attributes.find("data-charts=\"" + std::to_string(charts) + "\"") != std::string::npos);
    CHECK(attributes.find("data-charts-checked=\"ok\"") != std::string::npos);
    CHECK(attributes.find("data-errors") == std::string::npos);
    CHECK(dom.out.find(":CONSOLE") == std::string::npos);

    const fs::path png = shots / (name + ".png");
    fs::remove(png);
    const auto shot =
        test::run_command(chromium + flags + " --hide-scrollbars --window-size=860,2400 --screenshot=" + png.string() +
                          " file://" + page.string());
    CHECK(shot.exit_code == 0);
    CHECK(fs::exists(png));
    CHECK((fs::exists(png) && fs::file_size(png) > 10000));
  }
}

// --- the Chrome trace ---------------------------------------------------------------------------------------

TEST_CASE("compare --trace: every timed step's phases back to back and every timed batch, as the JSON times them",
          "[trace]") {
  test::TempDir dir;
  const auto trace_path = dir.path / "trace.json", json_path = dir.path / "report.json";
  const auto r = test::run_cli("compare --model gpt --preset tiny --steps 4 --warmup 1 --device cpu -q --trace " +
                               trace_path.string() + " --json " + json_path.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto trace = nlohmann::json::parse(read_text(trace_path));
  const auto report = nlohmann::json::parse(read_text(json_path));
  const auto step_ms = report["training"]["step_ms_all"].get<std::vector<double>>();
  const auto batch_ms = report["inference"]["latency_ms_all"].get<std::vector<double>>();
  REQUIRE(step_ms.size() == 4);
  std::map<int64_t, double> step_sum_us, step_start_us, step_end_us;
  std::vector<double> batch_us;
  std::set<std::string> phases, processes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    REQUIRE(e["ph"] == "X");
    if (e["cat"] == "training") {
      CHECK(e["pid"] == 0);
      const int64_t step = e["args"]["step"];
      const double ts = e["ts"], dur = e["dur"];
      if (!step_start_us.count(step)) step_start_us[step] = ts;
      CHECK(ts == Approx(step_start_us[step] + step_sum_us[step]).margin(1e-6));  // back to back
      step_sum_us[step] += dur;
      step_end_us[step] = ts + dur;
      phases.insert(e["name"].get<std::string>());
    } else {
      CHECK(e["cat"] == "inference");
      CHECK(e["pid"] == 1);
      batch_us.push_back(e["dur"]);
    }
  }
  CHECK(phases == std::set<std::string>{"data", "forward", "backward", "optimizer"});
  CHECK(processes.size() == 2);
  // Steps 4..7 (2 ledger steps and 1 warm-up before them), each as long as the report's step time, in order.
  REQUIRE(step_sum_us.size() == 4);
  int64_t i = 0;
  for (const auto& [step, sum] : step_sum_us) {
    CHECK(step == 4 + i);
    CHECK(sum == Approx(step_ms[static_cast<size_t>(i)] * 1e3).epsilon(1e-9));
    if (i > 0) CHECK(step_start_us[step] >= step_end_us[step - 1]);
    ++i;
  }
  CHECK(step_start_us.begin()->second == 0);
  REQUIRE(batch_us.size() == batch_ms.size());
  for (size_t b = 0; b < batch_us.size(); ++b) CHECK(batch_us[b] == Approx(batch_ms[b] * 1e3).epsilon(1e-9));
  CHECK(trace["otherData"]["time_origin"].get<std::string>().find("not on one clock") != std::string::npos);
}

TEST_CASE("trace output: refused before anything runs where nothing is timed, one track per sweep row", "[trace]") {
  test::TempDir dir;
  const auto path = (dir.path / "t.json").string();
  for (const std::string args : {"compare --model gpt --preset tiny --find-max-batch --cpu-memory-limit-mb 64",
                                 "train --model gpt --preset small --slice-layers 1,2"}) {
    INFO(args);
    const auto r = test::run_cli(args + " --device cpu --trace " + path);
    CHECK(r.exit_code == 2);
    CHECK(r.out.find("--trace") != std::string::npos);
    CHECK(r.out.find("ledger steps done") == std::string::npos);
    CHECK_FALSE(fs::exists(path));
  }
  CHECK(test::run_cli("serve --model mlp --preset tiny --trace " + path).exit_code == 2);  // no such option
  const auto sweep = test::run_cli(
      "infer --model mlp --preset tiny --batch 1,4 --dtype fp32,bf16 --steps 3 --warmup 0 "
      "--device cpu -q --trace " +
      path);
  INFO(sweep.out);
  REQUIRE(sweep.exit_code == 0);
  const auto trace = nlohmann::json::parse(read_text(path));
  std::set<int> tracks;
  int batches = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") tracks.insert(e["pid"].get<int>()), ++batches;
  CHECK(tracks.size() == 4);
  CHECK(batches == 4 * 3);
}

TEST_CASE("slices --html: each measured slice, the full model extrapolated and predicted, per mode", "[html]") {
  test::TempDir dir;
  const auto page = dir.path / "slices.html";
  const auto r = test::run_cli(
      "compare --model gpt --preset small --slice-layers 1,2 --steps 1 --warmup 0 --device cpu "
      "-q --html " +
      page.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const std::string html = read_text(page);
  for (const char* id : {"slices-training", "slices-inference"}) {
    INFO(id);
    const auto svg = chart(html, id);
    for (const char* bar :
         {">measured: 1 block<", ">measured: 2 blocks<", ">extrapolated: 4 blocks<", ">predicted: 4 blocks<"})
      CHECK(svg.find(bar) != std::string::npos);
    const auto categories = series_of(svg);
    CHECK(std::find(categories.begin(), categories.end(), "parameters") != categories.end());
    CHECK(std::find(categories.begin(), categories.end(), "saved activations / working set") != categories.end());
  }
  const auto training = series_of(chart(html, "slices-training"));
  CHECK(std::find(training.begin(), training.end(), "optimizer state") != training.end());
  // gpt's generation (compare's default 64 new tokens) by the same slices: its ledger with the KV cache.
  const auto generation = chart(html, "slices-generation");
  for (const char* bar : {">measured: 1 block<", ">extrapolated: 4 blocks<", ">predicted: 4 blocks<"})
    CHECK(generation.find(bar) != std::string::npos);
  const auto categories = series_of(generation);
  for (const char* category : {"parameters", "kv_cache", "working_set"})
    CHECK(std::find(categories.begin(), categories.end(), category) != categories.end());
}
