// The accelerator catalog (tvie/catalog.hpp): lib/data/accelerators.json, compiled in, parsed and checked.
#include <tvie/catalog.hpp>

#include <algorithm>
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
    if (kind != "purchase" && kind != "cloud_hourly") p.fail("kind", "purchase, cloud_hourly");
    a.price = AcceleratorPrice{p.number("usd", false), kind, p.text("source")};
  }
  a.estimates = r.texts("estimates");
  a.notes = r.texts("notes");
  a.sources = r.texts("sources");
  if (a.sources.empty()) r.fail("sources", "at least one source");
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
  c.notes = r.texts("notes");
  c.sources = r.texts("sources");
  return c;
}

}  // namespace

const std::vector<std::string>& accelerator_peak_fields() {
  static const std::vector<std::string> fields = {"fp64_tflops", "fp32_tflops", "tf32_tflops", "fp16_tflops",
                                                  "bf16_tflops", "fp8_tflops",  "int8_tops"};
  return fields;
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
  if (!j.contains("cards") || !j.at("cards").is_array()) r.fail("cards", "an array of cards");
  std::set<std::string> ids;
  for (size_t i = 0; i < j.at("cards").size(); ++i) {
    c.cards.push_back(parse_card(j.at("cards")[i], i));
    if (!ids.insert(c.cards.back().id).second)
      throw InvalidArgument("catalog.cards", c.cards.back().id, "ids that appear once");
  }
  if (!j.contains("cpu_classes") || !j.at("cpu_classes").is_array()) r.fail("cpu_classes", "an array");
  for (size_t i = 0; i < j.at("cpu_classes").size(); ++i)
    c.cpu_classes.push_back(parse_cpu_class(j.at("cpu_classes")[i], i));
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

}  // namespace tvie
