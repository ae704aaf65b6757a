// The accelerator catalog (lib/data/accelerators.json): units, dense (not sparse) peaks, sources, selection,
// and the loader's messages for a malformed file.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include <tvie/tvie.hpp>

using namespace tvie;

TEST_CASE("the catalog has the cards issue 13 names, each with sources", "[catalog][pure]") {
  const auto& c = accelerator_catalog();
  CHECK(c.schema_version == 1);
  CHECK(c.cards.size() >= 20);
  std::set<std::string> ids;
  for (const auto& a : c.cards) ids.insert(a.id);
  for (const char* id : {"a100-40gb-sxm",
                         "a100-80gb-sxm",
                         "a100-40gb-pcie",
                         "a100-80gb-pcie",
                         "h100-sxm",
                         "h100-pcie",
                         "h200",
                         "b200",
                         "l4",
                         "t4",
                         "a10g",
                         "l40s",
                         "rtx-3090",
                         "rtx-4090",
                         "v100-sxm2-32gb",
                         "mi250x",
                         "mi300x",
                         "gaudi2",
                         "jetson-agx-orin-64gb",
                         "tpu-v5e"}) {
    INFO(id);
    CHECK(ids.count(id) == 1);
  }
  REQUIRE(c.cpu_classes.size() >= 3);  // the host CPU classes
  for (const auto& a : c.cards) {
    INFO(a.id);
    CHECK(!a.sources.empty());
    CHECK(!a.name.empty());
    if (a.price) CHECK(!a.price->source.empty());
  }
}

TEST_CASE("cloud prices: dated, sourced, one per vendor, newest first, in a plausible range", "[catalog][pure]") {
  const auto& c = accelerator_catalog();
  CHECK(c.cloud_prices_source.find("epoch-research/training-cost-trends") != std::string::npos);
  int64_t priced = 0;
  for (const auto& a : c.cards) {
    INFO(a.id);
    priced += !a.cloud_prices.empty();
    std::set<std::string> vendors;
    for (size_t i = 0; i < a.cloud_prices.size(); ++i) {
      const auto& p = a.cloud_prices[i];
      INFO(p.vendor << " " << p.date);
      CHECK(p.usd_per_hour >= 0.05);  // a consumer card on a marketplace ..
      CHECK(p.usd_per_hour <= 50);    // .. an 8-GPU instance's share
      CHECK(p.date.size() == 10);
      CHECK(p.date >= "2017-01-01");
      CHECK(!p.source.empty());
      CHECK(vendors.insert(p.vendor).second);
      if (i > 0) CHECK(a.cloud_prices[i - 1].date >= p.date);
    }
  }
  // The cards practitioners rent: the A100s, H100s, H200, T4, L4, A10G, L40S.
  for (const char* id : {"a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200", "t4", "l4", "a10g", "l40s"}) {
    INFO(id);
    CHECK(!select_accelerators(c, id).front().cloud_prices.empty());
  }
  CHECK(priced >= 15);
}

TEST_CASE("catalog units: memory, bandwidth, power and peaks in plausible ranges", "[catalog][pure]") {
  // A figure in the wrong unit (bytes for GB, TB/s for GB/s, GFLOPS for TFLOPS, mW for W) falls outside these.
  for (const auto& a : accelerator_catalog().cards) {
    INFO(a.id);
    CHECK(a.memory_gb >= 8);
    CHECK(a.memory_gb <= 512);
    CHECK(a.memory_bandwidth_gbs >= 100);
    CHECK(a.memory_bandwidth_gbs <= 20000);
    if (a.tdp_w >= 0) {
      CHECK(a.tdp_w >= 10);
      CHECK(a.tdp_w <= 2000);
    }
    if (a.interconnect_gbs >= 0) CHECK(a.interconnect_gbs <= 4000);
    double best = -1;
    for (const auto& field : accelerator_peak_fields()) {
      const double p = a.peak(field);
      if (p < 0) continue;
      CHECK(p >= 0.1);  // fp64 on the L4 is 0.473 TFLOPS
      CHECK(p <= 10000);
      best = std::max(best, p);
    }
    CHECK(best > 0);  // every card has at least one peak
    // A matrix unit's 16-bit rate is at least its fp32 rate (a GFLOPS/TFLOPS mix-up would break this).
    if (a.fp16_tflops > 0 && a.fp32_tflops > 0) CHECK(a.fp16_tflops >= a.fp32_tflops);
    if (a.fp8_tflops > 0 && a.bf16_tflops > 0) CHECK(a.fp8_tflops >= a.bf16_tflops);
  }
}

TEST_CASE("no peak in the catalog is a sparse figure", "[catalog][pure]") {
  // Vendors print 2:4-sparsity figures beside (or instead of) the dense ones, twice as large. The catalog keeps
  // the sparse ones it has seen under `sparse`: each dense figure must be half of it (within the vendors' own
  // rounding: the L40S's 362.05 dense vs 733 sparse), never equal to it.
  int checked = 0;
  for (const auto& a : accelerator_catalog().cards) {
    for (const auto& [field, sparse] : a.sparse) {
      INFO(a.id << " " << field);
      const double dense = a.peak(field);
      REQUIRE(dense > 0);
      CHECK(sparse / dense >= 1.95);
      CHECK(sparse / dense <= 2.05);
      ++checked;
    }
  }
  CHECK(checked >= 30);
  // The figures practitioners quote, dense: H100 SXM bf16 989.5 (1979 sparse), A100 bf16 312 (624), L4 121.
  const auto cards = select_accelerators(accelerator_catalog(), "h100-sxm,a100-80gb-sxm,l4");
  REQUIRE(cards.size() == 3);
  CHECK(cards[0].id == "a100-80gb-sxm");  // the catalog's order
  CHECK(cards[0].bf16_tflops == Approx(312));
  CHECK(cards[1].bf16_tflops == Approx(989.5));
  CHECK(cards[2].bf16_tflops == Approx(121));
}

TEST_CASE("card selection and the host CPU class", "[catalog][pure]") {
  const auto& c = accelerator_catalog();
  CHECK(select_accelerators(c, "all").size() == c.cards.size());
  CHECK(select_accelerators(c, "t4").at(0).int8_tops == Approx(130));
  CHECK_THROWS_WITH(select_accelerators(c, "t4,k80"), Catch::Contains("cards: got 'k80'; accepted: all, or ids"));
  CHECK_THROWS_AS(select_accelerators(c, ""), InvalidArgument);
  CHECK_THROWS_AS(select_accelerators(c, "t4,"), InvalidArgument);
  CHECK(host_cpu_class({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8"}) == "cpu-amx");
  CHECK(host_cpu_class({"avx2", "avx512f"}) == "cpu-avx512");
  CHECK(host_cpu_class({"avx2"}) == "cpu-avx2");
  CHECK(host_cpu_class({}).empty());
  std::set<std::string> classes;
  for (const auto& k : c.cpu_classes) classes.insert(k.id);
  CHECK(classes == std::set<std::string>{"cpu-avx2", "cpu-avx512", "cpu-amx"});
}

TEST_CASE("a malformed catalog names the card and the field", "[catalog][pure]") {
  auto j = nlohmann::json::parse(std::string(
      R"({"schema_version": 1, "description": "d", "units": {}, "cpu_classes": [],
        "efficiency_defaults": {"description": "e",
          "accelerator": {"matmul": 0.7, "convolution": 0.5, "attention": 0.5, "memory": 0.8, "interconnect": 0.8,
                          "kernel_overhead_us": 5, "basis": {"matmul": "m"}},
          "cpu": {"matmul": 0.6, "convolution": 0.4, "attention": 0.4, "memory": 0.7, "interconnect": 0.5,
                  "kernel_overhead_us": 10, "basis": {}}},
        "cards": [
        {"id": "x1", "name": "X", "vendor": "V", "kind": "gpu", "architecture": "A", "year": 2024,
         "memory_gb": 16, "memory_type": "HBM", "memory_bandwidth_gbs": 800, "fp64_tflops": null,
         "fp32_tflops": 10, "tf32_tflops": null, "fp16_tflops": 100, "bf16_tflops": 100, "fp8_tflops": null,
         "int8_tops": 200, "sparse": {}, "tdp_w": 300, "interconnect": "PCIe", "interconnect_gbs": 64,
         "form_factor": "card", "price": null, "estimates": [], "notes": [], "sources": ["s"]}]})"));
  CHECK(parse_accelerator_catalog(j.dump()).cards.at(0).fp64_tflops == -1);  // null: not published
  auto bad = j;
  bad["cards"][0]["memory_gb"] = "16 GB";
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].memory_gb"));
  bad = j;
  bad["cards"][0]["fp16_tflops"] = -5;
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].fp16_tflops"));
  bad = j;
  bad["cards"][0]["sources"] = nlohmann::json::array();
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].sources"));
  bad = j;
  bad["cards"][0]["sparse"] = {{"fp17_tflops", 3}};
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].sparse.fp17_tflops"));
  bad = j;
  bad["cards"].push_back(j["cards"][0]);
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards: got 'x1'"));
  CHECK_THROWS_WITH(parse_accelerator_catalog("{"), Catch::Contains("catalog: got"));
  // Efficiencies: the card's own over the defaults for its kind; a fraction outside (0, 1] names its field.
  CHECK(parse_accelerator_catalog(j.dump()).cards.at(0).efficiency.matmul == 0.7);
  bad = j;
  bad["cards"][0]["efficiency"] = {{"matmul", 0.9}, {"basis", "measured"}};
  const auto own = parse_accelerator_catalog(bad.dump()).cards.at(0).efficiency;
  CHECK(own.matmul == 0.9);
  CHECK(own.basis.at("matmul") == "measured");
  CHECK(own.memory == 0.8);  // the default for its kind
  bad["cards"][0]["efficiency"]["matmul"] = 1.5;
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].efficiency.matmul"));
  bad = j;
  bad["efficiency_defaults"]["cpu"].erase("memory");
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.efficiency_defaults.cpu.memory"));
  // Published results: a rate > 0 with its source, one per benchmark.
  const nlohmann::json anchor = {{"benchmark", "mlperf-inference resnet50 offline"},
                                 {"samples_per_s", 5808.47},
                                 {"precision", "int8"},
                                 {"stack", "TensorRT"},
                                 {"source", "mlcommons/inference_results_v1.1 ..."}};
  bad = j;
  bad["cards"][0]["published"] = {anchor};
  const auto published = parse_accelerator_catalog(bad.dump()).cards.at(0);
  REQUIRE(published.published_result("mlperf-inference resnet50 offline") != nullptr);
  CHECK(published.published_result("mlperf-inference resnet50 offline")->samples_per_s == 5808.47);
  CHECK(published.published_result("mlperf-inference bert-99 offline") == nullptr);
  bad["cards"][0]["published"][0]["samples_per_s"] = 0;
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()),
                    Catch::Contains("catalog.cards[x1].published[0].samples_per_s"));
  bad["cards"][0]["published"] = {anchor, anchor};
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.cards[x1].published[1].benchmark"));
  bad = j;
  bad["schema_version"] = 2;
  CHECK_THROWS_WITH(parse_accelerator_catalog(bad.dump()), Catch::Contains("catalog.schema_version"));
}

TEST_CASE("every card's efficiencies are complete, with a basis for each, and the host CPU as a card",
          "[catalog][pure]") {
  const auto& catalog = accelerator_catalog();
  for (const auto& a : catalog.cards) {
    INFO(a.id);
    const auto& e = a.efficiency;
    for (double f : {e.matmul, e.convolution, e.attention, e.memory, e.interconnect}) {
      CHECK(f > 0);
      CHECK(f <= 1);
    }
    CHECK(e.kernel_overhead_us >= 0);
    for (const char* field : {"matmul", "convolution", "attention", "memory", "interconnect", "kernel_overhead_us"})
      CHECK_FALSE(e.basis.at(field).empty());
  }
  // A measured card keeps its own matmul fraction (the MAMF table); the rest are the defaults.
  const auto h100 = select_accelerators(catalog, "h100-sxm").at(0);
  CHECK(h100.efficiency.matmul == Approx(0.803));
  CHECK(h100.efficiency.basis.at("matmul").find("794.5") != std::string::npos);
  CHECK(select_accelerators(catalog, "t4").at(0).efficiency.matmul ==
        catalog.efficiency_defaults.at("accelerator").matmul);
  // The host: peaks = per-cycle figure x cores x GHz.
  const CpuClass* amx = nullptr;
  for (const auto& c : catalog.cpu_classes)
    if (c.id == "cpu-amx") amx = &c;
  REQUIRE(amx != nullptr);
  const Accelerator host = host_accelerator(*amx, 2, 2.0, 24);
  CHECK(host.fp32_tflops == Approx(64 * 2 * 2.0 / 1000));
  CHECK(host.bf16_tflops == Approx(1024 * 2 * 2.0 / 1000));
  CHECK(host.memory_bandwidth_gbs == Approx(2 * amx->memory_bandwidth_gbs_per_core));
  CHECK(host.fp16_tflops == -1);  // no fp16 unit in the class: fp16 is not projected there
  CHECK(host.efficiency.matmul == catalog.efficiency_defaults.at("cpu").matmul);
  CHECK(host.name == "this machine's CPU (cpu-amx, 2 cores at 2 GHz)");
  CHECK(host_accelerator(*amx, 1, 2.5, 24).name == "this machine's CPU (cpu-amx, 1 core at 2.5 GHz)");
  CHECK_THROWS_WITH(host_accelerator(*amx, 0, 2.0, 24), Catch::Contains("cores"));
  CHECK_THROWS_WITH(host_accelerator(*amx, 2, 0, 24), Catch::Contains("clock_ghz"));
}
