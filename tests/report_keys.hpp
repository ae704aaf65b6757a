// The JSON reports against their documentation: docs/reports.md lists every key path of every report kind
// in blocks that begin with "```keys KIND" (one path a line; "?" after a path: present only in some runs).
#pragma once

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tvie_test_paths.hpp"

namespace tvie::test {

inline std::string reports_doc() {
  std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/docs/reports.md");
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct DocumentedKeys {
  std::set<std::string> required, optional;
};

// A block's lines: a key path, then "?" if optional (anything after is a comment); "+NAME" includes block
// NAME; a path ending in ".{statistics}" stands for the ten keys of a statistics summary, one ending in
// ".{card_fraction}" for the eleven keys of a fraction of the card (tvie/headroom.hpp).
inline void add_documented_keys(const std::string& doc, const std::string& block, bool optional, DocumentedKeys& keys) {
  std::istringstream in(doc);
  bool inside = false, found = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      if (line == "```keys " + block) inside = found = true;
      continue;
    }
    if (line.rfind("```", 0) == 0) break;
    std::istringstream words(line);
    std::string path, mark;
    words >> path >> mark;
    if (path.empty()) continue;
    const bool opt = optional || mark == "?";
    if (path[0] == '+') {
      add_documented_keys(doc, path.substr(1), opt, keys);
      continue;
    }
    const std::string stats = ".{statistics}";
    std::vector<std::string> paths{path};
    if (path.size() > stats.size() && path.compare(path.size() - stats.size(), stats.size(), stats) == 0) {
      paths.clear();
      for (const char* s : {"count", "mean", "stddev", "min", "max", "p50", "p90", "p95", "p99", "p99_9"})
        paths.push_back(path.substr(0, path.size() - stats.size() + 1) + s);
    }
    const std::string card = ".{card_fraction}";
    if (path.size() > card.size() && path.compare(path.size() - card.size(), card.size(), card) == 0) {
      paths.clear();
      for (const char* s : {"card", "card_name", "why_none", "peak_field", "peak_tflops", "bandwidth_gbs",
                            "model_tflops", "peak_fraction", "bytes", "bytes_counted", "bandwidth_fraction"})
        paths.push_back(path.substr(0, path.size() - card.size() + 1) + s);
    }
    for (const auto& p : paths) (opt ? keys.optional : keys.required).insert(p);
  }
  INFO("```keys " << block << " in docs/reports.md");
  REQUIRE(found);
}

inline DocumentedKeys documented_keys(const std::string& kind) {
  DocumentedKeys keys;
  add_documented_keys(reports_doc(), kind, false, keys);
  return keys;
}

// Leaf paths: "a.b" for objects, "a[]" for an array (and "a[].c" for the keys of its objects).
inline void collect_key_paths(const nlohmann::json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      collect_key_paths(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    bool objects = false;
    for (const auto& e : j)
      if (e.is_object()) {
        objects = true;
        collect_key_paths(e, prefix + "[]", out);
      }
    if (!objects) out.insert(prefix + "[]");
  } else {
    out.insert(prefix);
  }
}

// Every key of `report` is documented for `kind`, and every key documented as always there is there.
inline void check_documented(const nlohmann::json& report, const std::string& kind) {
  const auto doc = documented_keys(kind);
  std::set<std::string> actual;
  collect_key_paths(report, "", actual);
  for (const auto& key : actual) {
    INFO(kind << " report key " << key << " is not in docs/reports.md (```keys " << kind << ")");
    CHECK((doc.required.count(key) + doc.optional.count(key)) == 1);
  }
  for (const auto& key : doc.required) {
    INFO(kind << " report lacks the documented key " << key);
    CHECK(actual.count(key) == 1);
  }
}

// "## JSON report (schema_version N)" in docs/reports.md.
inline int documented_schema_version() {
  const std::string doc = reports_doc(), marker = "## JSON report (schema_version ";
  const auto at = doc.find(marker);
  REQUIRE(at != std::string::npos);
  return std::stoi(doc.substr(at + marker.size()));
}

}  // namespace tvie::test
