// The accelerator catalog (tvie/catalog.hpp): lib/data/accelerators.json, compiled in, parsed and checked.
#include <tvie/catalog.hpp>

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace detail {
extern const char* const kAcceleratorCatalogJson;  // catalog_data.cpp, generated
}

namespace {

using json = nlohmann::json;

// Field readers that name the card and the field of a malformed entry.
struct Reader {
  const json& j;
  std::string where;  // "catalog.cards[h100-sxm]"

  [[noreturn]] void fail(const std::string& key, const std::string& accepted) const {
    throw InvalidArgument(cat(where, ".", key), j.contains(key) ? j.at(key).dump() : "missing", accepted);
  }
  std::string text(const std::string& key) const {
    if (!j.contains(key) || !j.at(key).is_string()) fail(key, "a string");
    return j.at(key).get<std::string>();
  }
  // A figure >= 0, or -1 for null (not published).
  double number(const std::string& key, bool nullable = true) const {
    if (!j.contains(key)) fail(key, "a number >= 0 (null: not published)");
    const auto& v = j.at(key);
    if (v.is_null() && nullable) return -1;
    if (!v.is_number() || v.get<double>() < 0) fail(key, nullable ? "a number >= 0 or null" : "a number >= 0");
    return v.get<double>();
  }
  std::vector<std::string> texts(const std::string& key) const {
    if (!j.contains(key) || !j.at(key).is_array()) fail(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& v : j.at(key)) {
      if (!v.is_string()) fail(key, "an array of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
};

// An efficiency object: fractions in (0, 1], the overhead >= 0, and a basis per field. `complete`: every field.
Efficiency parse_efficiency(const json& j, const std::string& where, bool complete) {
  if (!j.is_object()) throw InvalidArgument(where, j.dump(), "an object {matmul, ..., basis}");
  const Reader r{j, where};
  Efficiency e;
  const auto fraction = [&](const char* key, double& out) {
    if (!j.contains(key)) {
      if (complete) r.fail(key, "a number in (0, 1]");
      return;
    }
    out = r.number(key, false);
    if (out <= 0 || out > 1) r.fail(key, "a number in (0, 1]");
  };
  fraction("matmul", e.matmul);
  fraction("convolution", e.convolution);
  fraction("attention", e.attention);
  fraction("memory", e.memory);
  fraction("interconnect", e.interconnect);
  if (j.contains("kernel_overhead_us") || complete) e.kernel_overhead_us = r.number("kernel_overhead_us", false);
  if (!j.contains("basis")) r.fail("basis", complete ? "an object: field -> where it comes from" : "a string");
  const auto& basis = j.at("basis");
  if (complete) {
    if (!basis.is_object()) r.fail("basis", "an object: field -> where it comes from");
    for (const auto& [field, text] : basis.items()) {
      if (!text.is_string()) r.fail("basis", "strings");
      e.basis[field] = text.get<std::string>();
    }
  } else {
    // A card's own figures share one basis (its measurement).
    const std::string text = r.text("basis");
    for (const char* key : {"matmul", "convolution", "attention", "memory", "interconnect", "kernel_overhead_us"})
      if (j.contains(key)) e.basis[key] = text;
  }
  return e;
}

// `own` over `defaults`, field by field.
Efficiency overlay(const Efficiency& defaults, const Efficiency& own) {
  Efficiency e = defaults;
  const auto take = [&](double Efficiency::*field, const char* key) {
    if (own.*field >= 0) {
      e.*field = own.*field;
      e.basis[key] = own.basis.count(key) ? own.basis.at(key) : "";
    }
  };
  take(&Efficiency::matmul, "matmul");
  take(&Efficiency::convolution, "convolution");
  take(&Efficiency::attention, "attention");
  take(&Efficiency::memory, "memory");
  take(&Efficiency::interconnect, "interconnect");
  take(&Efficiency::kernel_overhead_us, "kernel_overhead_us");
  return e;
}

Accelerator parse_card(const json& j, size_t index) {
  if (!j.is_object()) throw InvalidArgument(cat("catalog.cards[", index, "]"), j.dump(), "an object");
  const std::string id = j.contains("id") && j.at("id").is_string() ? j.at("id").get<std::string>() : cat(index);
  const Reader r{j, cat("catalog.cards[", id, "]")};
  Accelerator a;
  a.id = r.text("id");
  a.name = r.text("name");
  a.vendor = r.text("vendor");
  a.kind = r.text("kind");
  a.architecture = r.text("architecture");
  a.year = static_cast<int>(r.number("year"));
  if (a.year < 0) a.year = 0;
  a.memory_gb = r.number("memory_gb", false);
  a.memory_type = r.text("memory_type");
  a.memory_bandwidth_gbs = r.number("memory_bandwidth_gbs", false);
  a.fp64_tflops = r.number("fp64_tflops");
  a.fp32_tflops = r.number("fp32_tflops");
  a.tf32_tflops = r.number("tf32_tflops");
  a.fp16_tflops = r.number("fp16_tflops");
  a.bf16_tflops = r.number("bf16_tflops");
  a.fp8_tflops = r.number("fp8_tflops");
  a.int8_tops = r.number("int8_tops");
  if (!j.contains("sparse") || !j.at("sparse").is_object()) r.fail("sparse", "an object (field -> figure)");
  const auto& fields = accelerator_peak_fields();
  for (const auto& [field, value] : j.at("sparse").items()) {
    if (std::find(fields.begin(), fields.end(), field) == fields.end() || !value.is_number())
      throw InvalidArgument(cat(r.where, ".sparse.", field), value.dump(),
                            "a number under one of " + detail::join(fields));
    a.sparse[field] = value.get<double>();
  }
  a.tdp_w = r.number("tdp_w");
  a.interconnect = r.text("interconnect");
  a.interconnect_gbs = r.number("interconnect_gbs");
  a.form_factor = r.text("form_factor");
  if (!j.contains("price")) r.fail("price", "null or {usd, kind, source}");
  if (!j.at("price").is_null()) {
    const Reader p{j.at("price"), r.where + ".price"};
    const std::string kind = p.text("kind");
    if (kind != "purchase") p.fail("kind", "purchase (cloud prices go under cloud_prices)");
    a.price = AcceleratorPrice{p.number("usd", false), kind, p.text("source")};
  }
  if (j.contains("cloud_prices")) {
    if (!j.at("cloud_prices").is_array()) r.fail("cloud_prices", "an array of {usd_per_hour, vendor, date, ...}");
    size_t n = 0;
    for (const auto& e : j.at("cloud_prices")) {
      const Reader c{e, cat(r.where, ".cloud_prices[", n++, "]")};
      CloudPrice price{c.number("usd_per_hour", false),
                       c.text("vendor"),
                       c.text("date"),
                       c.text("region"),
                       c.text("offer"),
                       c.text("source")};
      if (!(price.usd_per_hour > 0)) c.fail("usd_per_hour", "a price > 0");
      if (price.vendor.empty() || price.source.empty() || price.date.size() != 10)
        c.fail("vendor", "a vendor, a YYYY-MM-DD date and a source");
      a.cloud_prices.push_back(std::move(price));
    }
  }
  a.estimates = r.texts("estimates");
  a.notes = r.texts("notes");
  a.sources = r.texts("sources");
  if (a.sources.empty()) r.fail("sources", "at least one source");
  if (j.contains("efficiency")) a.efficiency = parse_efficiency(j.at("efficiency"), r.where + ".efficiency", false);
  if (j.contains("published")) {
    if (!j.at("published").is_array())
      r.fail("published", "an array of {benchmark, samples_per_s, precision, stack, source}");
    size_t n = 0;
    for (const auto& e : j.at("published")) {
      const Reader p{e, cat(r.where, ".published[", n++, "]")};
      PublishedResult result{p.text("benchmark"), p.number("samples_per_s", false), p.text("precision"),
                             p.text("stack"), p.text("source")};
      if (!(result.samples_per_s > 0)) p.fail("samples_per_s", "a rate > 0");
      if (result.source.empty()) p.fail("source", "where the result is published");
      if (a.published_result(result.benchmark) != nullptr) p.fail("benchmark", "one result per benchmark");
      a.published.push_back(std::move(result));
    }
  }
  return a;
}

CpuClass parse_cpu_class(const json& j, size_t index) {
  const Reader r{j, cat("catalog.cpu_classes[", index, "]")};
  CpuClass c;
  c.id = r.text("id");
  c.name = r.text("name");
  c.isa = r.text("isa");
  c.fp32_flop_per_cycle_per_core = r.number("fp32_flop_per_cycle_per_core", false);
  c.bf16_flop_per_cycle_per_core = r.number("bf16_flop_per_cycle_per_core");
  c.int8_op_per_cycle_per_core = r.number("int8_op_per_cycle_per_core");
  c.memory_bandwidth_gbs_per_core = r.number("memory_bandwidth_gbs_per_core", false);
  c.notes = r.texts("notes");
  c.sources = r.texts("sources");
  c.estimates = r.texts("estimates");
  return c;
}

}  // namespace

const std::vector<std::string>& accelerator_peak_fields() {
  static const std::vector<std::string> fields = {"fp64_tflops", "fp32_tflops", "tf32_tflops", "fp16_tflops",
                                                  "bf16_tflops", "fp8_tflops",  "int8_tops"};
  return fields;
}

const PublishedResult* Accelerator::published_result(const std::string& benchmark) const {
  for (const auto& r : published)
    if (r.benchmark == benchmark) return &r;
  return nullptr;
}

double Accelerator::peak(const std::string& field) const {
  if (field == "fp64_tflops") return fp64_tflops;
  if (field == "fp32_tflops") return fp32_tflops;
  if (field == "tf32_tflops") return tf32_tflops;
  if (field == "fp16_tflops") return fp16_tflops;
  if (field == "bf16_tflops") return bf16_tflops;
  if (field == "fp8_tflops") return fp8_tflops;
  if (field == "int8_tops") return int8_tops;
  throw InvalidArgument("peak", field, detail::join(accelerator_peak_fields()));
}

AcceleratorCatalog parse_accelerator_catalog(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InvalidArgument("catalog", detail::first_line(e.what()), "a JSON document (lib/data/accelerators.json)");
  }
  if (!j.is_object()) throw InvalidArgument("catalog", "not an object", "{schema_version, cards, cpu_classes, ...}");
  const Reader r{j, "catalog"};
  AcceleratorCatalog c;
  c.schema_version = static_cast<int>(r.number("schema_version", false));
  if (c.schema_version != 1) r.fail("schema_version", "1");
  c.description = r.text("description");
  if (!j.contains("units") || !j.at("units").is_object()) r.fail("units", "an object (field -> unit)");
  for (const auto& [field, unit] : j.at("units").items())
    c.units[field] = unit.is_string() ? unit.get<std::string>() : "";
  if (!j.contains("efficiency_defaults") || !j.at("efficiency_defaults").is_object())
    r.fail("efficiency_defaults", "an object {description, accelerator, cpu}");
  {
    const auto& e = j.at("efficiency_defaults");
    c.efficiency_description = Reader{e, "catalog.efficiency_defaults"}.text("description");
    for (const char* kind : {"accelerator", "cpu"}) {
      if (!e.contains(kind))
        throw InvalidArgument(cat("catalog.efficiency_defaults.", kind), "missing", "an object {matmul, ..., basis}");
      c.efficiency_defaults[kind] = parse_efficiency(e.at(kind), cat("catalog.efficiency_defaults.", kind), true);
    }
  }
  if (j.contains("cloud_prices_source")) c.cloud_prices_source = r.text("cloud_prices_source");
  if (!j.contains("cards") || !j.at("cards").is_array()) r.fail("cards", "an array of cards");
  std::set<std::string> ids;
  for (size_t i = 0; i < j.at("cards").size(); ++i) {
    c.cards.push_back(parse_card(j.at("cards")[i], i));
    c.cards.back().efficiency = overlay(c.efficiency_defaults.at("accelerator"), c.cards.back().efficiency);
    if (!ids.insert(c.cards.back().id).second)
      throw InvalidArgument("catalog.cards", c.cards.back().id, "ids that appear once");
  }
  if (!j.contains("cpu_classes") || !j.at("cpu_classes").is_array()) r.fail("cpu_classes", "an array");
  for (size_t i = 0; i < j.at("cpu_classes").size(); ++i) {
    c.cpu_classes.push_back(parse_cpu_class(j.at("cpu_classes")[i], i));
    c.cpu_classes.back().efficiency = c.efficiency_defaults.at("cpu");
  }
  return c;
}

const AcceleratorCatalog& accelerator_catalog() {
  static const AcceleratorCatalog catalog = parse_accelerator_catalog(detail::kAcceleratorCatalogJson);
  return catalog;
}

std::vector<Accelerator> select_accelerators(const AcceleratorCatalog& catalog, const std::string& spec) {
  if (spec == "all") return catalog.cards;
  std::vector<std::string> ids;
  for (const auto& c : catalog.cards) ids.push_back(c.id);
  std::set<std::string> wanted;
  size_t begin = 0;
  while (begin <= spec.size()) {
    const size_t end = std::min(spec.find(',', begin), spec.size());
    const std::string id = spec.substr(begin, end - begin);
    if (std::find(ids.begin(), ids.end(), id) == ids.end())
      throw InvalidArgument("cards", id.empty() ? spec : id, "all, or ids separated by commas: " + detail::join(ids));
    wanted.insert(id);
    begin = end + 1;
  }
  std::vector<Accelerator> out;
  for (const auto& c : catalog.cards)
    if (wanted.count(c.id)) out.push_back(c);
  return out;
}

std::string host_cpu_class(const std::vector<std::string>& features) {
  const auto has = [&](const char* f) { return std::find(features.begin(), features.end(), f) != features.end(); };
  if (has("amx_bf16")) return "cpu-amx";
  if (has("avx512f")) return "cpu-avx512";
  if (has("avx2")) return "cpu-avx2";
  return "";
}

Accelerator host_accelerator(const CpuClass& cpu, int64_t cores, double clock_ghz, double memory_gb) {
  if (cores < 1) throw InvalidArgument("cores", cat(cores), "at least 1");
  if (!(clock_ghz > 0)) throw InvalidArgument("clock_ghz", cat(clock_ghz), "a clock above 0 GHz");
  Accelerator a;
  a.id = "host";
  a.name =
      cat("this machine's CPU (", cpu.id, ", ", cores, cores == 1 ? " core at " : " cores at ", clock_ghz, " GHz)");
  a.vendor = "host";
  a.kind = "cpu";
  a.architecture = cpu.id;
  a.memory_gb = memory_gb;
  a.memory_type = "DRAM";
  a.memory_bandwidth_gbs = cpu.memory_bandwidth_gbs_per_core * static_cast<double>(cores);
  const auto peak = [&](double per_cycle) {
    return per_cycle > 0 ? per_cycle * static_cast<double>(cores) * clock_ghz / 1000.0 : -1.0;
  };
  a.fp32_tflops = peak(cpu.fp32_flop_per_cycle_per_core);
  a.bf16_tflops = peak(cpu.bf16_flop_per_cycle_per_core);
  a.int8_tops = peak(cpu.int8_op_per_cycle_per_core);
  a.interconnect = "none (one host)";
  a.form_factor = "host CPU";
  a.estimates = cpu.estimates;
  a.sources = cpu.sources;
  a.efficiency = cpu.efficiency;
  return a;
}

double host_clock_ghz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    try {
      sum += std::stod(line.substr(colon + 1));
      ++n;
    } catch (const std::exception&) {
    }
  }
  return n > 0 ? sum / n / 1000.0 : 0.0;
}

}  // namespace tvie
