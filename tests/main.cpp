// Test runner. Installs the counting CPU allocator before the first tensor, and skips with a visible reason
// (exit code 77: ctest's SKIP_RETURN_CODE, reported "Skipped") [gpu] tests when no CUDA device is available (unless
// TVIE_REQUIRE_GPU=1: then they fail), [dist] tests when the build has no Gloo backend, and [browser] tests when no
// chromium is installed (unless TVIE_REQUIRE_BROWSER=1). A test that finds out inside that it cannot run here skips
// itself (TVIE_SKIP, helpers.hpp): a run whose every test case skipped also ends with 77.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <tvie/config.hpp>
#include <tvie/device.hpp>
#include <tvie/memory.hpp>

#include <ATen/Parallel.h>

#include "helpers.hpp"

namespace {

bool has_tag(const Catch::TestCase& test, const std::string& tag) {
  const auto& tags = test.getTestCaseInfo().tags;
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

// One reason a selection of tests cannot run here. It applies when `missing` holds and every selected test
// carries `tag` (and not `unless_tag`): each is then listed with the reason, and the run ends with 77 (skipped)
// or, when `required` (the machine should have what is missing), with 1 (failed).
struct SkipRule {
  std::string tag;
  std::string unless_tag;
  bool missing = false;
  bool required = false;
  std::string reason;
  std::string required_by;  // the variable that made it required, shown after the reason
};

// Returns the exit code when a rule applies to the selection, else -1.
int apply_skip_rules(Catch::Session& session, const std::vector<SkipRule>& rules) {
  const auto& config = session.config();
  if (config.listTestNamesOnly() || config.listTests() || config.listTags()) return -1;
  const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  if (selected.empty()) return -1;
  for (const auto& rule : rules) {
    if (!rule.missing) continue;
    const bool all = std::all_of(selected.begin(), selected.end(), [&](const auto& t) {
      return has_tag(t, rule.tag) && (rule.unless_tag.empty() || !has_tag(t, rule.unless_tag));
    });
    if (!all) continue;
    for (const auto& t : selected)
      std::cout << (rule.required ? "FAILED [" : "SKIPPED [") << rule.tag << "] " << t.getTestCaseInfo().name << ": "
                << rule.reason << (rule.required ? " (" + rule.required_by + ")" : std::string{}) << "\n";
    return rule.required ? 1 : 77;
  }
  return -1;
}

// After a run without failures: 77 (ctest's "Skipped") when every selected test case skipped itself (TVIE_SKIP),
// else 0. A run of several test cases, some of them skipped, ends with a line that counts them.
int skipped_exit_code(Catch::Session& session) {
  const auto& config = session.config();
  if (config.listTestNamesOnly() || config.listTests() || config.listTags()) return 0;
  std::set<std::string> skipped;
  for (const auto& s : tvie::test::recorded_skips())
    if (s.whole) skipped.insert(s.test);
  if (skipped.empty()) return 0;
  const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  if (skipped.size() >= selected.size()) return 77;
  std::cout << "tvie tests: " << selected.size() - skipped.size() << " test cases ran, " << skipped.size()
            << " skipped (the SKIPPED lines above say why)\n";
  return 0;
}

}  // namespace

// The intra-op threads every test starts with: TVIE_TEST_THREADS (1..256), else 2, whatever the machine's cores, so
// that the byte-exact peaks (the kernels' scratch grows with the threads) are the same on every machine; the
// [cpu-kinds] tests run again at 1 and 4 (test_predict.cpp). 0 when the variable is malformed.
int test_threads() {
  const char* v = std::getenv("TVIE_TEST_THREADS");
  if (v == nullptr || *v == '\0') return 2;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 1 && n <= 256 ? static_cast<int>(n) : 0;
}

int main(int argc, char* argv[]) {
  tvie::install_cpu_memory_counter();
  const int threads = test_threads();
  if (threads == 0) {
    std::cerr << "tvie_tests: TVIE_TEST_THREADS: got '" << std::getenv("TVIE_TEST_THREADS")
              << "'; accepted: an integer in 1..256 (unset: 2)\n";
    return 2;
  }
  at::set_num_threads(threads);
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  // Every run: a test case that ends without a single assertion fails (a skip says why and counts: TVIE_SKIP).
  // Catch's command line takes one -w, which ctest's entries spend on NoTests.
  auto& data = session.configData();
  data.warnings = static_cast<Catch::WarnAbout::What>(data.warnings | Catch::WarnAbout::NoAssertions);
  const std::vector<SkipRule> rules = {
      // TVIE_REQUIRE_GPU=1 (the GPU check): a machine that should have a usable GPU but does not fails.
      {"gpu", "", !tvie::cuda_available(), tvie::test::gpu_required(),
       "needs a CUDA device; torch::cuda::is_available() is false on this machine", "TVIE_REQUIRE_GPU=1"},
      {"dist", "gpu", !TVIE_WITH_GLOO, false,
       "this build has no Gloo backend (no gloo headers at configure time; scripts/setup.sh fetches them)", ""},
      {"browser", "", tvie::test::chromium_path().empty(), tvie::test::browser_required(),
       "needs chromium (apt-get install chromium; scripts/setup.sh installs it)", "TVIE_REQUIRE_BROWSER=1"},
  };
  if (const int rc = apply_skip_rules(session, rules); rc >= 0) return rc;
  const int failed = session.run();
  if (failed != 0) return failed;
  return skipped_exit_code(session);
}
