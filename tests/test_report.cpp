// The JSON report and its atomic writing.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "report_keys.hpp"
#include "tvie_test_paths.hpp"

using namespace tvie;
namespace fs = std::filesystem;
using tvie::test::read_text;
using tvie::test::remove_tree;

namespace {

fs::path make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "tvie-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

const nlohmann::json& at_path(const nlohmann::json& j, const std::string& dotted) {
  const nlohmann::json* node = &j;
  std::string rest = dotted;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    const std::string key = rest.substr(0, dot);
    INFO("key " << dotted);
    REQUIRE(node->contains(key));
    node = &(*node)[key];
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
  }
  return *node;
}

}  // namespace

TEST_CASE("JSON report holds the documented keys as numbers", "[report]") {
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  const auto report = run_compare(*make_zoo_workload("mlp", "tiny"), s, {"cpu", {"tvie", "compare", "--model", "mlp"}});
  const auto j = nlohmann::json::parse(to_json_string(report));

  CHECK(at_path(j, "schema_version").get<int>() == test::documented_schema_version());
  test::check_documented(j, "compare");
  CHECK(at_path(j, "context.tvie_version").get<std::string>() == TVIE_VERSION_STRING);
  CHECK(at_path(j, "context.torch_version").get<std::string>().rfind("2.", 0) == 0);
  CHECK(at_path(j, "context.cuda_available").is_boolean());
  CHECK(at_path(j, "context.device").get<std::string>() == "cpu");
  CHECK(at_path(j, "context.argv").size() == 4);
  for (const auto* key : {"training.memory.parameters",
                          "training.memory.gradients",
                          "training.memory.optimizer_state",
                          "training.memory.activations",
                          "training.memory.other",
                          "training.memory.peak",
                          "training.step_ms.mean",
                          "training.step_ms.p50",
                          "training.step_ms.p90",
                          "training.step_ms.p99",
                          "training.throughput.samples_per_s",
                          "inference.memory.parameters",
                          "inference.memory.activations",
                          "inference.memory.other",
                          "inference.memory.peak",
                          "inference.latency_ms.mean",
                          "inference.latency_ms.p50",
                          "inference.latency_ms.p90",
                          "inference.latency_ms.p99",
                          "inference.throughput.samples_per_s",
                          "gap.peak_memory_ratio"}) {
    INFO(key);
    CHECK(at_path(j, key).is_number());
  }
  // The figures are the report's, not copies typed elsewhere.
  CHECK(at_path(j, "training.memory.parameters").get<int64_t>() == report.training.memory.parameters);
  CHECK(at_path(j, "gap.peak_memory_ratio").get<double>() ==
        Approx(static_cast<double>(report.training.memory.peak) / static_cast<double>(report.inference.memory.peak)));
  CHECK(at_path(j, "training.step_ms_all").size() == 2);
  CHECK(at_path(j, "training.warmup_steps").get<int64_t>() == 0);
  CHECK(at_path(j, "training.ledger_steps").get<int64_t>() == Trainer::kLedgerSteps);
}

TEST_CASE("console report puts both modes side by side and names the counter", "[report]") {
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  std::ostringstream out;
  ConsoleReporter(out).report(run_compare(*make_zoo_workload("gpt", "tiny"), s, {"cpu"}));
  const std::string text = out.str();
  for (const auto* needle : {"parameters", "gradients", "optimizer_state", "activations", "peak", "training",
                             "inference fp32", "counter: allocated", "tokens/s", "p99", "2 ledger + 0 warm-up"}) {
    INFO(needle);
    CHECK(text.find(needle) != std::string::npos);
  }
  // On the CPU the step's batch is a view of the data pool, outside the peak: the note says so and does not put
  // it in `other` (as it does on CUDA, where the step copies it to the device).
  CHECK(text.find("is a view of the data pool, made before the baseline") != std::string::npos);
  CHECK(text.find("copied to the device") == std::string::npos);
}

TEST_CASE("int8 packs that could not be measured are said to be, not shown as 0 B", "[report]") {
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  auto report = run_compare(*make_zoo_workload("mlp", "tiny"), s, {"cpu"});
  CHECK(report.inference.memory.packed_weights_measured);  // fp32: nothing outside torch's allocator
  const auto console = [](const CompareReport& r) {
    std::ostringstream out;
    ConsoleReporter(out).report(r);
    return out.str();
  };
  const std::string note = "packed by fbgemm outside torch's allocator: not measured here";
  const std::string bar = "inference, measured (int8 packs not measured)";
  CHECK(console(report).find(note) == std::string::npos);
  CHECK(to_html_string(report).find(bar) == std::string::npos);
  CHECK(nlohmann::json::parse(to_json_string(report))["inference"]["memory"]["packed_weights_measured"] == true);
  // As where glibc's heap statistics cannot be read (heap_statistics_available() false): the report says so.
  report.inference.memory.packed_weights_measured = false;
  CHECK(console(report).find(note) != std::string::npos);
  CHECK(to_html_string(report).find(bar) != std::string::npos);  // the ledger chart's bar says what it lacks
  CHECK(nlohmann::json::parse(to_json_string(report))["inference"]["memory"]["packed_weights_measured"] == false);
}

TEST_CASE("the max-batch table says which peak it shows: allocated, and reserved where there is an allocator cache",
          "[report][max_batch]") {
  MaxBatchReport r;
  r.workload = "gpt/gpt2-small";
  MaxBatchResult training;
  training.mode = SearchMode::training;
  training.largest_fitting = 138;
  training.first_failing = 139;
  training.predicted_largest = 153;
  training.limit_bytes = int64_t{1} << 40;
  training.limit_source = "test";
  training.training = TrainingMemory{};
  training.training->peak = 3 * 1024;
  MaxBatchResult inference = training;
  inference.mode = SearchMode::inference;
  inference.training.reset();
  inference.inference = InferenceMemory{};
  inference.inference->peak = 5 * 1024;
  r.training = training;
  r.inference = inference;
  const auto console = [&] {
    std::ostringstream out;
    ConsoleReporter(out).report(r);
    return out.str();
  };
  std::string text = console();  // the CPU: no allocator cache, no reserved column
  INFO(text);
  CHECK(text.find("peak allocated there") != std::string::npos);
  CHECK(text.find(format_bytes(3 * 1024)) != std::string::npos);
  CHECK(text.find("reserved") == std::string::npos);
  r.training->training->peak_reserved = 7 * 1024;  // CUDA: the caching allocator's segments
  r.inference->inference->peak_reserved = 9 * 1024;
  text = console();
  INFO(text);
  CHECK(text.find("peak reserved there") != std::string::npos);
  CHECK(text.find(format_bytes(7 * 1024)) != std::string::npos);
  CHECK(text.find(format_bytes(9 * 1024)) != std::string::npos);
  CHECK(text.find("its largest batch is an upper") != std::string::npos);
}

TEST_CASE("files are written atomically and bad output paths are refused", "[report]") {
  const fs::path dir = make_temp_dir();
  const std::string path = (dir / "report.json").string();
  write_file_atomically(path, "{\"a\": 1}");
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "{\"a\": 1}");                                                    // exactly what was given
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);  // no temporary left

  CHECK_NOTHROW(check_output_path(path, "json"));
  CHECK_THROWS_AS(check_output_path((dir / "missing" / "x.json").string(), "json"), InvalidArgument);
  CHECK_THROWS_AS(check_output_path(dir.string(), "json"), InvalidArgument);
  CHECK_THROWS_AS(check_output_path("", "json"), InvalidArgument);
  CHECK_THROWS_AS(write_file_atomically((dir / "missing" / "x.json").string(), "x"), Error);
  remove_tree(dir);
}

namespace {

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// While alive, a file may not grow beyond `bytes` (a write past it fails with EFBIG instead of SIGXFSZ).
struct FileSizeLimit {
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    previous_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved;
    limit.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::signal(SIGXFSZ, previous_handler);
  }
  rlimit saved{};
  sighandler_t previous_handler{};
};

}  // namespace

TEST_CASE("a failed write or rename leaves the existing file as it was and no temporary", "[report]") {
  test::TempDir dir("tvie-report");
  const fs::path path = dir.path / "report.json";
  write_file_atomically(path.string(), "{\"old\": true}");
  const std::string old_content = read_text(path);
  REQUIRE(old_content == "{\"old\": true}");

  // The write fails part way: the file system refuses to grow a file past 16 bytes.
  {
    FileSizeLimit limit(16);
    CHECK_THROWS_AS(write_file_atomically(path.string(), std::string(4096, 'x')), Error);
  }
  CHECK(read_text(path) == old_content);
  CHECK(names_in(dir.path) == std::set<std::string>{"report.json"});

  // The temporary cannot be created: a directory stands where it would go.
  const fs::path blocker = dir.path / ("report.json.tmp." + std::to_string(::getpid()));
  fs::create_directory(blocker);
  CHECK_THROWS_AS(write_file_atomically(path.string(), "{\"new\": true}"), Error);
  CHECK(read_text(path) == old_content);
  fs::remove(blocker);

  // The rename fails: the target is a directory with something in it.
  const fs::path target = dir.path / "taken";
  fs::create_directory(target);
  std::ofstream(target / "inside") << "x";
  try {
    write_file_atomically(target.string(), "{}");
    FAIL("renamed over a directory");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot rename"));
  }
  CHECK(fs::is_directory(target));
  CHECK(names_in(dir.path) == std::set<std::string>{"report.json", "taken"});
}

TEST_CASE("format_bytes uses binary units", "[report]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(3 * 1024 * 1024) == "3.00 MiB");
  CHECK(format_bytes(-2048) == "-2.0 KiB");
}

// What each format renders is known at compile time: the formats a report lacks are no overloads at all.
static_assert(renders<CsvFormat, CompareReport> && renders<CsvFormat, PlanReport>);
static_assert(!renders<CsvFormat, SliceReport>);
static_assert(renders<TraceFormat, CompareReport> && renders<TraceFormat, TrainReport> &&
              renders<TraceFormat, InferReport>);
static_assert(!renders<TraceFormat, ServeReport> && !renders<TraceFormat, DecodeReport> &&
              !renders<TraceFormat, AllreduceReport> && !renders<TraceFormat, MaxBatchReport> &&
              !renders<TraceFormat, SliceReport> && !renders<TraceFormat, CardsReport> &&
              !renders<TraceFormat, PlanReport> && !renders<TraceFormat, ZooReport>);
static_assert(renders<JsonFormat, SliceReport> && renders<HtmlFormat, ZooReport>);

TEST_CASE("CsvReporter writes the reports that are tables and refuses the others, writing nothing", "[report]") {
  tvie::test::TempDir dir("tvie-csv");
  const auto path = (dir.path / "x.csv").string();
  try {
    CsvReporter(path).report(SliceReport{});  // several tables: no one CSV
    FAIL("a slice report accepted as CSV");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "csv");
    CHECK(e.value() == "slices");
    CHECK(e.accepted() == "a report that is one table (not slices: use JSON)");
  }
  CHECK_FALSE(std::filesystem::exists(path));
  const auto trace = (dir.path / "x.trace.json").string();
  TraceReporter tracer(trace);
  CHECK_THROWS_WITH(tracer.report(ServeReport{}),
                    Catch::Contains("trace") && Catch::Contains("serve") && Catch::Contains("no timed steps"));
  CHECK_THROWS_WITH(tracer.report(PlanReport{}), Catch::Contains("plan"));
  CHECK_FALSE(std::filesystem::exists(trace));
  AllreduceReport a;
  a.result.dtype = "fp32";
  a.result.rows.push_back({});
  a.result.rows.back().bytes = 64;
  a.result.rows.back().count = 16;
  CsvReporter(path).report(a);
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  CHECK(header.rfind("bytes,count,dtype,", 0) == 0);
  CHECK(row.rfind("64,16,fp32,", 0) == 0);
}

namespace {

// A fake powercap tree: two packages (one about to wrap), a core subzone, an mmio zone and a psys zone.
struct FakePowercap {
  std::filesystem::path root = std::filesystem::temp_directory_path() / ("tvie-powercap-" + std::to_string(::getpid()));
  FakePowercap() {
    remove_tree(root);
    zone("intel-rapl:0", "package-0", 1000, 900);
    zone("intel-rapl:0:0", "core", 1000, 5);
    zone("intel-rapl:1", "package-1", 5000, 50);
    zone("intel-rapl:2", "psys", 5000, 7);
    zone("intel-rapl-mmio:0", "package-0", 5000, 9);
  }
  ~FakePowercap() { remove_tree(root); }
  void zone(const std::string& dir, const std::string& name, int64_t max, int64_t energy) {
    std::filesystem::create_directories(root / dir);
    std::ofstream(root / dir / "name") << name << "\n";
    std::ofstream(root / dir / "max_energy_range_uj") << max << "\n";
    set(dir, energy);
  }
  void set(const std::string& dir, int64_t energy) { std::ofstream(root / dir / "energy_uj") << energy << "\n"; }
};

}  // namespace

TEST_CASE("energy: RAPL package domains from powercap, with the counter's wrap", "[energy]") {
  FakePowercap fake;
  const auto domains = find_rapl_packages(fake.root.string());
  REQUIRE(domains.size() == 2);  // the packages only: not the core subzone, psys or the mmio zone
  CHECK(domains[0].name == "package-0");
  CHECK(domains[0].max_energy_range_uj == 1000);
  CHECK(domains[1].name == "package-1");
  CHECK(rapl_delta_uj(900, 100, 1000) == 200);  // wrapped at 1000
  CHECK(rapl_delta_uj(100, 900, 1000) == 800);
  auto meter = make_energy_meter(c10::Device(c10::kCPU), fake.root.string());
  meter->start();
  fake.set("intel-rapl:0", 100);  // 900 -> wrap -> 100: 200 uJ
  fake.set("intel-rapl:1", 60);   // 10 uJ
  const auto e = meter->stop();
  REQUIRE(e.available());
  CHECK(e.joules == Approx(210e-6));
  CHECK(e.source.find("RAPL package-0 + package-1") == 0);
  CHECK(e.mean_watts() > 0);
}

namespace {
// The fake NVML library (tests/fake_nvml.cpp), loaded here and kept loaded: the meter's dlopen finds this copy.
struct FakeNvml {
  void* lib = ::dlopen(TVIE_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F fn(const char* name) const {
    return reinterpret_cast<F>(::dlsym(lib, name));
  }
  void reset(int init_rc, int energy_rc, const char* bus_id, unsigned long long mj) const {
    fn<void (*)(int, int, const char*, unsigned long long)>("fake_nvml_reset")(init_rc, energy_rc, bus_id, mj);
  }
  void set_energy(unsigned long long mj, int rc = 0) const {
    fn<void (*)(unsigned long long, int)>("fake_nvml_set_energy")(mj, rc);
  }
  int initialised() const { return fn<int (*)()>("fake_nvml_initialised")(); }
  int energy_reads() const { return fn<int (*)()>("fake_nvml_energy_reads")(); }
  ~FakeNvml() {
    if (lib) ::dlclose(lib);
  }
};
}  // namespace

TEST_CASE("energy: NVML's board energy in millijoules, its errors said, init balanced by shutdown", "[energy]") {
  FakeNvml nvml;
  REQUIRE(nvml.lib != nullptr);
  const std::string bus = "00000000:1B:00.0";
  SECTION("a reading: the counter's difference, millijoules to joules") {
    nvml.reset(0, 0, bus.c_str(), 1'000'000);
    {
      auto meter = make_nvml_energy_meter(bus, "cuda:0", TVIE_FAKE_NVML_PATH);
      CHECK(nvml.initialised() == 1);
      meter->start();
      nvml.set_energy(1'002'500);  // 2.5 J later
      const auto e = meter->stop();
      REQUIRE(e.available());
      CHECK(e.joules == Approx(2.5));
      CHECK(e.source == "NVML total energy, cuda:0 (the whole board; updates every 20-100 ms)");
      CHECK(nvml.energy_reads() == 3);  // the probe when made, start, stop
      // A second window starts from the counter where it is then.
      meter->start();
      nvml.set_energy(1'003'000);
      CHECK(meter->stop().joules == Approx(0.5));
      // A counter that went back (the driver reloaded) is no reading, never a negative or a huge one.
      meter->start();
      nvml.set_energy(10);
      const auto back = meter->stop();
      CHECK_FALSE(back.available());
      CHECK(back.source == "not available: NVML's energy counter went back (driver reloaded?)");
      // A read that fails at the end of the window.
      meter->start();
      nvml.set_energy(20, 999);  // NVML_ERROR_UNKNOWN
      CHECK(meter->stop().source == "not available: NVML energy read failed");
    }
    CHECK(nvml.initialised() == 0);  // the meter's destructor shut NVML down
  }
  SECTION("each failure says which, and NVML is shut down again where it was initialised") {
    nvml.reset(9, 0, bus.c_str(), 0);  // NVML_ERROR_DRIVER_NOT_LOADED
    auto e = make_nvml_energy_meter(bus, "cuda:0", TVIE_FAKE_NVML_PATH)->stop();
    CHECK(e.source == "not available: nvmlInit failed (NVML error 9)");
    CHECK(nvml.initialised() == 0);

    nvml.reset(0, 0, "00000000:65:00.0", 0);
    e = make_nvml_energy_meter(bus, "cuda:0", TVIE_FAKE_NVML_PATH)->stop();
    CHECK(e.source == "not available: NVML has no device at PCI bus id 00000000:1B:00.0");
    CHECK(nvml.initialised() == 0);

    nvml.reset(0, 3, bus.c_str(), 0);  // NVML_ERROR_NOT_SUPPORTED: boards before Volta
    e = make_nvml_energy_meter(bus, "cuda:0", TVIE_FAKE_NVML_PATH)->stop();
    CHECK(e.source == "not available: nvmlDeviceGetTotalEnergyConsumption unsupported (before Volta?)");
    CHECK(e.joules == -1);
    CHECK(nvml.initialised() == 0);
  }
  SECTION("no NVML library, or a library without its functions") {
    auto e = make_nvml_energy_meter(bus, "cuda:0", "/nonexistent/libnvidia-ml.so.1")->stop();
    CHECK(e.source == "not available: /nonexistent/libnvidia-ml.so.1 (NVML) not found");
    e = make_nvml_energy_meter(bus, "cuda:0", "libm.so.6")->stop();
    CHECK(e.source == "not available: libm.so.6 lacks NVML's energy functions");
    CHECK(e.mean_watts() == -1);
  }
}

TEST_CASE("energy: no counter is a reason, not zero joules", "[energy]") {
  auto meter = make_energy_meter(c10::Device(c10::kCPU), "/nonexistent-powercap");
  meter->start();
  const auto e = meter->stop();
  CHECK_FALSE(e.available());
  CHECK(e.joules == -1);
  CHECK(e.mean_watts() == -1);
  CHECK(e.source == "not available: /nonexistent-powercap does not exist (no RAPL here, e.g. a virtual machine)");
  // A training run reports its energy or why it has none, and J per sample only with a reading.
  const auto w = make_zoo_workload("mlp", "tiny");
  TrainSettings s;
  s.batch_size = 4;
  s.steps = 2;
  s.warmup_steps = 0;
  const auto r = measure_training(*w, s, c10::Device(c10::kCPU));
  if (r.energy.available()) {
    CHECK(r.joules_per_sample == Approx(r.energy.joules / 8));
  } else {
    CHECK(r.energy.source.rfind("not available: ", 0) == 0);
    CHECK(r.joules_per_sample == -1);
  }
}

TEST_CASE("JSON: each ledger category under its own key (distinct bytes in, the same bytes out)", "[report]") {
  // A measured ledger never tells the keys apart where two categories hold the same bytes (gradients equal the
  // parameters in every precision): here each field has bytes of its own.
  TrainReport r;
  auto& m = r.training.memory;
  m.parameters = 1001, m.gradients = 1002, m.optimizer_state = 1003, m.activations = 1004, m.weight_copies = 1005;
  m.loss_scaler = 1006, m.comm_buffers = 1007, m.other = -1008, m.peak = 1009, m.peak_reserved = 1010, m.batch = 1011;
  const auto j = nlohmann::json::parse(to_json_string(r));
  const auto& jm = j.at("training").at("memory");
  CHECK(jm.at("parameters") == 1001);
  CHECK(jm.at("gradients") == 1002);
  CHECK(jm.at("optimizer_state") == 1003);
  CHECK(jm.at("activations") == 1004);
  CHECK(jm.at("weight_copies") == 1005);
  CHECK(jm.at("loss_scaler") == 1006);
  CHECK(jm.at("comm_buffers") == 1007);
  CHECK(jm.at("other") == -1008);
  CHECK(jm.at("peak") == 1009);
  CHECK(jm.at("peak_reserved") == 1010);
  CHECK(jm.at("batch") == 1011);
}

TEST_CASE("the ledger's rows are one definition: console, JSON and CSV give the same predicted other", "[report]") {
  // Hand-made bytes: other, predicted = the peak less the predicted categories = 10,000 - (1,000 + 1,000 + 2,000 +
  // 500 + 12 + 0 + 3,000) = 2,488 (training); inference: 4,000 - (700 + 300 + 1,500) = 1,500.
  CompareReport r;
  r.training.precision = TrainPrecision::amp_fp16;
  r.training.loss_scaling = true;
  auto& tp = r.training.predicted;
  tp.parameters = 1000, tp.gradients = 1000, tp.optimizer_state = 2000, tp.weight_copies = 500, tp.loss_scaler = 12;
  tp.comm_buffers = 0, tp.activations = 3000, tp.batch = 64, tp.peak = 10000;
  auto& ip = r.inference.predicted;
  ip.parameters = 700, ip.packed_weights = 300, ip.activations = 1500, ip.batch = 64, ip.peak = 4000;
  r.training.memory.peak = 10240, r.inference.memory.peak = 4096;
  CHECK(tp.other() == 2488);
  CHECK(ip.other() == 1500);
  const auto j = nlohmann::json::parse(to_json_string(r));
  CHECK(j.at("training").at("memory_predicted").at("other") == 2488);
  CHECK(j.at("inference").at("memory_predicted").at("other") == 1500);
  const std::string csv = to_csv_string(r);
  CHECK(csv.find("\nother,0,2488,0,1500\n") != std::string::npos);
  CHECK(csv.find("\npacked_weights,,,0,300\n") != std::string::npos);  // training has no such row: empty cells
  std::ostringstream out;
  ConsoleReporter(out).report(r);
  const std::string text = out.str();
  const auto line = text.substr(text.find("  other"), text.find('\n', text.find("  other")) - text.find("  other"));
  CHECK(line.find(format_bytes(2488)) != std::string::npos);
  CHECK(line.find(format_bytes(1500)) != std::string::npos);
  CHECK(text.find("  loss_scaler") != std::string::npos);   // held: amp-fp16 with loss scaling
  CHECK(text.find("  comm_buffers") == std::string::npos);  // not held: one process
  // Without a predicted peak there is no predicted other.
  tp.peak = -1;
  CHECK(tp.other() == -1);
  CHECK(nlohmann::json::parse(to_json_string(r)).at("training").at("memory_predicted").at("other") == -1);
}

TEST_CASE("console and JSON say when the ranks' parameters differ after the run", "[report]") {
  // A working run never shows it (the ranks agree, tests/test_dist.cpp compares their files): a report that says
  // they differ must print so.
  TrainReport r;
  r.distributed = DistributedResult{};
  r.distributed->backend = "gloo";
  r.distributed->world_size = 2;
  const auto console = [&] {
    std::ostringstream out;
    ConsoleReporter(out).report(r);
    return out.str();
  };
  r.distributed->parameters_identical = true;
  CHECK(console().find("parameters identical on every rank after the run: yes") != std::string::npos);
  CHECK(nlohmann::json::parse(to_json_string(r))["training"]["distributed"]["parameters_identical"] == true);
  r.distributed->parameters_identical = false;
  CHECK(console().find("parameters identical on every rank after the run: NO") != std::string::npos);
  CHECK(nlohmann::json::parse(to_json_string(r))["training"]["distributed"]["parameters_identical"] == false);
}

TEST_CASE("console: a decode's KV cache in the copy's floating dtype on the report's device", "[report]") {
  DecodeReport r;
  r.workload = "gpt/tiny";
  const auto line = [&](const std::string& device, InferenceDtype dtype) {
    r.context.device = device;
    r.context.device_type = device.rfind("cuda", 0) == 0 ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
    r.result.dtype = dtype;
    std::ostringstream out;
    ConsoleReporter(out).report(r);
    const std::string text = out.str();
    return text.substr(0, text.find('\n'));
  };
  CHECK_THAT(line("cpu", InferenceDtype::int8), Catch::Contains("int8 weights, fp32 KV cache"));
  // CUDA's W8A8 copy keeps bf16 around its int8 Linear layers on sm_80 and later, fp16 before (a T4); with no GPU
  // to ask, the device is taken to have bf16.
  const auto gpu = torch::cuda::is_available() ? describe_gpu(c10::Device(c10::kCUDA, 0)) : std::nullopt;
  const bool has_bf16 = !gpu || std::stoi(gpu->compute_capability) >= 8;
  CHECK_THAT(line("cuda:0 (NVIDIA H200)", InferenceDtype::int8),
             Catch::Contains(has_bf16 ? "int8 weights, bf16 KV cache" : "int8 weights, fp16 KV cache"));
  CHECK_THAT(line("cuda:0 (NVIDIA H200)", InferenceDtype::fp8), Catch::Contains("fp8 weights, bf16 KV cache"));
  CHECK_THAT(line("cpu", InferenceDtype::fp16), Catch::Contains("fp16 weights, fp16 KV cache"));
}
