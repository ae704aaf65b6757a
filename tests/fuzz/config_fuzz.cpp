// libFuzzer target: tvie's --config parser (tvie::parse_options_file) on arbitrary bytes, under AddressSanitizer and
// UndefinedBehaviorSanitizer (scripts/fuzz.sh builds and runs it; ctest runs that for a bounded time). Refusing the
// input with InvalidArgument is the expected outcome for most inputs; any other exception, a crash or a sanitizer
// report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <tvie/errors.hpp>
#include <tvie/options_file.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto entries = tvie::parse_options_file(text, "fuzz.json");
    // Every entry accepted is one the command line could take: a key, and text for a scalar or a joined array.
    for (const auto& e : entries)
      if (e.key.empty() && e.text.empty() && e.json.empty()) std::abort();
  } catch (const tvie::InvalidArgument&) {
  }
  return 0;
}
