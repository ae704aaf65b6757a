// Test runner. Installs the counting CPU allocator before the first tensor, and skips [gpu] tests with
// a visible reason (exit code 77: ctest's SKIP_RETURN_CODE) when no CUDA device is available (unless
// TVIE_REQUIRE_GPU=1: then they fail), [dist] tests when the build has no Gloo backend, and [browser] tests when
// no chromium is installed (unless TVIE_REQUIRE_BROWSER=1), and [timing] tests (a measured time against a
// projection) in a build with AddressSanitizer.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>

#include <tvie/config.hpp>
#include <tvie/device.hpp>
#include <tvie/memory.hpp>

#include "helpers.hpp"

namespace {

bool has_tag(const Catch::TestCase& test, const std::string& tag) {
  const auto& tags = test.getTestCaseInfo().tags;
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

}  // namespace

int main(int argc, char* argv[]) {
  tvie::install_cpu_memory_counter();
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const auto& config = session.config();
  if (!config.listTestNamesOnly() && !config.listTests() && !config.listTags() && !tvie::cuda_available()) {
    const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
    const bool all_gpu = !selected.empty() &&
                         std::all_of(selected.begin(), selected.end(), [](const auto& t) { return has_tag(t, "gpu"); });
    if (all_gpu) {
      // TVIE_REQUIRE_GPU=1 (the GPU check): a machine that should have a usable GPU but does not fails.
      const bool required = tvie::test::gpu_required();
      for (const auto& t : selected)
        std::cout << (required ? "FAILED [gpu] " : "SKIPPED [gpu] ") << t.getTestCaseInfo().name
                  << ": needs a CUDA device; torch::cuda::is_available() is false on this machine"
                  << (required ? " (TVIE_REQUIRE_GPU=1)" : "") << "\n";
      return required ? 1 : 77;
    }
  }
  if (!config.listTestNamesOnly() && !config.listTests() && !config.listTags() && !TVIE_WITH_GLOO) {
    const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
    const bool all_dist = !selected.empty() && std::all_of(selected.begin(), selected.end(), [](const auto& t) {
      return has_tag(t, "dist") && !has_tag(t, "gpu");
    });
    if (all_dist) {
      for (const auto& t : selected)
        std::cout << "SKIPPED [dist] " << t.getTestCaseInfo().name
                  << ": this build has no Gloo backend (no gloo headers at configure time; scripts/setup.sh fetches "
                     "them)\n";
      return 77;
    }
  }
  if (!config.listTestNamesOnly() && !config.listTests() && !config.listTags() && tvie::test::chromium_path().empty()) {
    const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
    const bool all_browser = !selected.empty() && std::all_of(selected.begin(), selected.end(),
                                                              [](const auto& t) { return has_tag(t, "browser"); });
    if (all_browser) {
      const bool required = tvie::test::browser_required();
      for (const auto& t : selected)
        std::cout << (required ? "FAILED [browser] " : "SKIPPED [browser] ") << t.getTestCaseInfo().name
                  << ": needs chromium (apt-get install chromium; scripts/setup.sh installs it)"
                  << (required ? " (TVIE_REQUIRE_BROWSER=1)" : "") << "\n";
      return required ? 1 : 77;
    }
  }
  if (!config.listTestNamesOnly() && !config.listTests() && !config.listTags() && tvie::test::kAddressSanitizer) {
    const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
    const bool all_timing = !selected.empty() && std::all_of(selected.begin(), selected.end(),
                                                             [](const auto& t) { return has_tag(t, "timing"); });
    if (all_timing) {
      for (const auto& t : selected)
        std::cout << "SKIPPED [timing] " << t.getTestCaseInfo().name
                  << ": built with AddressSanitizer, whose interceptors slow every memory call: the measured time "
                     "is not what this CPU does\n";
      return 77;
    }
  }
  return session.run();
}
