// The accelerator catalog: the cards tvie projects a measured workload onto (A100, H100, T4, L4 ...), as data
// (lib/data/accelerators.json, compiled into the library and installed as share/tvie/accelerators.json).
// Every peak is dense: no 2:4 structured sparsity. Where a vendor publishes a sparse figure the catalog keeps
// it apart (Accelerator::sparse) so that it can be checked (dense x 2 = sparse) and never used. Every figure has
// its source in the entry; figures that are not the vendor's own are listed in `estimates`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tvie {

struct AcceleratorPrice {
  double usd = 0;      // one device
  std::string kind;    // "purchase" (list or street price, dated in the source)
  std::string source;  // where and when
};

// One cloud vendor's on-demand price for one device, as listed on `date` ("cloud_prices" in the catalog, filled by
// scripts/catalog-cloud-prices.py from a dated public price table; the top-level "cloud_prices_source" says which).
struct CloudPrice {
  double usd_per_hour = 0;
  std::string vendor;  // "Amazon Web Services", "Lambda Labs"
  std::string date;    // YYYY-MM-DD the price was read
  std::string region;  // "" when the table gives none
  std::string offer;   // the instance or offer, as the table names it
  std::string source;  // the (archived) page
};

// Achievable fractions of a card's datasheet figures, per operator class (tvie/projection.hpp uses them); -1
// where not set. `basis` says, per field, where each figure comes from: the card's own entry (a measurement),
// the catalog's defaults for its kind (an estimate), or a calibration from a measured report.
struct Efficiency {
  double matmul = -1;              // of the dense matrix peak at the matmul's precision
  double convolution = -1;         // of the same peak
  double attention = -1;           // of the same peak (flash kernels)
  double memory = -1;              // of the memory bandwidth: elementwise, normalisation, the optimizer
  double interconnect = -1;        // of the link's one-direction bandwidth: the all-reduce's bus bandwidth
  double kernel_overhead_us = -1;  // host time per kernel launched, microseconds
  std::map<std::string, std::string> basis;
};

// A card's result in a public benchmark ("published" in its entry): what a deployed serving stack reached on it.
// Per card: the system's result divided by its accelerator count.
struct PublishedResult {
  std::string benchmark;     // "mlperf-inference resnet50 offline", "mlperf-inference bert-99 offline"
  double samples_per_s = 0;  // > 0
  std::string precision;     // "int8"
  std::string stack;         // "TensorRT 8.4.2"
  std::string source;        // the result's file in its repository
};

struct Accelerator {
  std::string id;                          // short name for --cards: "a100-80gb-sxm", "l4", "tpu-v5e"
  std::string name;                        // "NVIDIA A100 80GB SXM4"
  std::string vendor, kind, architecture;  // kind: "gpu", "tpu"
  int year = 0;                            // 0: not known
  double memory_gb = 0;                    // decimal GB (10^9 B), as vendors quote it
  std::string memory_type;                 // "HBM3"
  double memory_bandwidth_gbs = 0;         // GB/s (10^9 B/s)
  // Dense peaks in TFLOPS (int8: TOPS); -1 where the vendor publishes none or the device lacks the unit.
  double fp64_tflops = -1, fp32_tflops = -1, tf32_tflops = -1, fp16_tflops = -1, bf16_tflops = -1, fp8_tflops = -1,
         int8_tops = -1;
  std::map<std::string, double> sparse;  // "fp16_tflops" -> the vendor's figure with 2:4 sparsity (not used)
  double tdp_w = -1;                     // board or module power limit; -1: not published
  std::string interconnect;              // "NVLink 4.0 (18 links) + PCIe Gen5 x16"
  double interconnect_gbs = -1;          // GB/s per device, bidirectional, fastest device-to-device link
  std::string form_factor;
  std::optional<AcceleratorPrice> price;
  std::vector<CloudPrice> cloud_prices;  // newest first, one per vendor; empty: none found
  std::vector<std::string> estimates;    // "field: why it is not the vendor's figure"
  std::vector<std::string> notes;
  std::vector<std::string> sources;
  // The card's own fractions ("efficiency" in its entry) over the catalog's defaults for its kind: complete.
  Efficiency efficiency;
  std::vector<PublishedResult> published;  // public benchmarks' results on this card (tvie plan --stack tuned)

  // Its published result of `benchmark`; nullptr when the catalog has none.
  const PublishedResult* published_result(const std::string& benchmark) const;

  // The dense peak by field name ("bf16_tflops"); -1 when absent. InvalidArgument for an unknown name.
  double peak(const std::string& field) const;
};

// A class of host CPU: peaks per core and per cycle by ISA (a machine's peak = cores x clock x these).
struct CpuClass {
  std::string id, name, isa;
  double fp32_flop_per_cycle_per_core = -1, bf16_flop_per_cycle_per_core = -1, int8_op_per_cycle_per_core = -1;
  double memory_bandwidth_gbs_per_core = -1;  // an estimate (see estimates)
  std::vector<std::string> notes, sources, estimates;
  Efficiency efficiency;  // the catalog's CPU defaults
};

struct AcceleratorCatalog {
  int schema_version = 0;
  std::string description;
  std::map<std::string, std::string> units;  // field -> unit
  std::string efficiency_description;
  std::string cloud_prices_source;                        // where the cloud prices come from, and how they were chosen
  std::map<std::string, Efficiency> efficiency_defaults;  // "accelerator", "cpu"
  std::vector<Accelerator> cards;
  std::vector<CpuClass> cpu_classes;
};

// The dense peak fields, in the catalog's order.
const std::vector<std::string>& accelerator_peak_fields();

// The built-in catalog (parsed once).
const AcceleratorCatalog& accelerator_catalog();
// Parses a catalog's JSON text. Throws InvalidArgument("catalog.<field>", ...) naming the card and field of the
// first entry that is malformed (a missing field, a number where text belongs, a negative figure).
AcceleratorCatalog parse_accelerator_catalog(const std::string& json_text);
// "all" or comma-separated ids ("t4,l4"): the cards in the catalog's order. InvalidArgument("cards", ...) for an
// unknown id, naming the accepted ones.
std::vector<Accelerator> select_accelerators(const AcceleratorCatalog& catalog, const std::string& spec);
// The CPU class a machine with these ISA features ("avx2", "avx512f", "amx_bf16" ...) belongs to: the id of the
// best one it has ("cpu-amx", "cpu-avx512", "cpu-avx2"), "" when none.
std::string host_cpu_class(const std::vector<std::string>& cpu_features);

// The host CPU as a card: its class's peaks per core and cycle x `cores` x `clock_ghz` (fp32 on the FMA units;
// bf16 and int8 where the class has them), `cores` x the class's per-core bandwidth, `memory_gb` of RAM, the
// class's efficiency defaults. InvalidArgument unless cores >= 1 and clock_ghz > 0.
Accelerator host_accelerator(const CpuClass& cpu_class, int64_t cores, double clock_ghz, double memory_gb);
// The clock this machine's cores report (/proc/cpuinfo "cpu MHz", their mean), in GHz; 0 when unknown.
double host_clock_ghz();

}  // namespace tvie
