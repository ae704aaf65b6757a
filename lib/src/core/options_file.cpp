// tvie/options_file.hpp: a JSON object of options, read with nlohmann-json.
#include <tvie/options_file.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <tvie/errors.hpp>

namespace tvie {
namespace {

using nlohmann::json;

// A scalar as the command line would spell it: strings as they are, numbers as JSON writes them.
std::string scalar_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// An options file is a flat object of scalars and arrays of them: anything deeper or larger is not one, and is
// refused before it is built (a value nested 100,000 deep would exhaust the stack).
constexpr int kMaxDepth = 16;
constexpr std::uintmax_t kMaxBytes = 1 << 20;
struct TooDeep {};

}  // namespace

std::vector<OptionsFileEntry> read_options_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_directory(status)) throw InvalidArgument("config", path, "a readable JSON file (this is a directory)");
  if (fs::is_regular_file(status) && fs::file_size(path, ec) > kMaxBytes)
    throw InvalidArgument("config", path, "a JSON file of at most 1 MiB");
  std::ifstream in(path);
  if (!in.good()) throw InvalidArgument("config", path, "a readable JSON file");
  std::string text(kMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InvalidArgument("config", path, "a readable JSON file");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxBytes) throw InvalidArgument("config", path, "a JSON file of at most 1 MiB");  // a pipe
  return parse_options_file(text, path);
}

std::vector<OptionsFileEntry> parse_options_file(const std::string& text, const std::string& path) {
  if (text.size() > kMaxBytes) throw InvalidArgument("config", path, "a JSON file of at most 1 MiB");
  json doc;
  try {
    doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    throw InvalidArgument("config", path, "a JSON object of options (values nested at most 16 deep)");
  } catch (const json::exception& e) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column 5: ...", or for a number
    // no double holds "[json.exception.out_of_range.406] number overflow parsing '1e400'".
    const std::string what = e.what();
    const auto at = what.find("] ");
    throw InvalidArgument(
        "config", path,
        "a JSON object of options (not JSON: " + (at == std::string::npos ? what : what.substr(at + 2)) + ")");
  }
  if (!doc.is_object())
    throw InvalidArgument("config", path,
                          "a JSON object of options, each key a long option without its dashes: "
                          "{\"batch\": 8, \"quiet\": true}");
  std::vector<OptionsFileEntry> entries;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const json& v = it.value();
    OptionsFileEntry e{it.key(), v.is_boolean(), "", v.dump()};
    const auto refuse = [&] {
      return InvalidArgument("config", path + ": \"" + e.key + "\": " + e.json,
                             "a string, a number, true or false, or an array of strings and numbers (joined by "
                             "commas, as on the command line)");
    };
    if (v.is_boolean()) {
      e.text = v.get<bool>() ? "true" : "false";
    } else if (v.is_string() || v.is_number()) {
      e.text = scalar_text(v);
    } else if (v.is_array() && !v.empty()) {
      for (const auto& item : v) {
        if (!item.is_string() && !item.is_number()) throw refuse();
        if (!e.text.empty()) e.text += ',';
        e.text += scalar_text(item);
      }
    } else {
      throw refuse();
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace tvie
