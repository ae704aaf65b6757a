// Test runner. Installs the counting CPU allocator before the first tensor, and skips [gpu] tests with
// a visible reason (exit code 77: ctest's SKIP_RETURN_CODE) when no CUDA device is available (unless
// TVIE_REQUIRE_GPU=1: then they fail), [dist] tests when the build has no Gloo backend, and [browser] tests when
// no chromium is installed (unless TVIE_REQUIRE_BROWSER=1), and [timing] tests (a measured time against a
// projection) in a build with AddressSanitizer.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <tvie/config.hpp>
#include <tvie/device.hpp>
#include <tvie/memory.hpp>

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

}  // namespace

int main(int argc, char* argv[]) {
  tvie::install_cpu_memory_counter();
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const std::vector<SkipRule> rules = {
      // TVIE_REQUIRE_GPU=1 (the GPU check): a machine that should have a usable GPU but does not fails.
      {"gpu", "", !tvie::cuda_available(), tvie::test::gpu_required(),
       "needs a CUDA device; torch::cuda::is_available() is false on this machine", "TVIE_REQUIRE_GPU=1"},
      {"dist", "gpu", !TVIE_WITH_GLOO, false,
       "this build has no Gloo backend (no gloo headers at configure time; scripts/setup.sh fetches them)", ""},
      {"browser", "", tvie::test::chromium_path().empty(), tvie::test::browser_required(),
       "needs chromium (apt-get install chromium; scripts/setup.sh installs it)", "TVIE_REQUIRE_BROWSER=1"},
      {"timing", "", tvie::test::kAddressSanitizer, false,
       "built with AddressSanitizer, whose interceptors slow every memory call: the measured time is not what "
       "this CPU does",
       ""},
  };
  if (const int rc = apply_skip_rules(session, rules); rc >= 0) return rc;
  return session.run();
}
