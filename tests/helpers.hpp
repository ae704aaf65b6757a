// Helpers shared by the tests.
#pragma once

#include <ftw.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <tvie/tvie.hpp>

#include "tvie_test_paths.hpp"

namespace tvie::test {

// Built with AddressSanitizer (scripts/sanitize.sh). Its allocator replaces glibc's, so the heap growth tvie reads
// from mallinfo2 (CPU int8's fbgemm packs) is not there to read, and its interceptors slow every memory call, so a
// measured time is not what the machine does: tests of those figures skip under it, with the reason.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// TVIE_REQUIRE_GPU=1 in the environment: a [gpu] test without a usable CUDA device fails instead of
// being skipped (scripts/gpu-check.sh sets it, so that a broken CUDA set-up cannot pass as "skipped").
inline bool gpu_required() {
  const char* v = std::getenv("TVIE_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

// Skips. A test that cannot run on this machine (the CPU kind, a tool, a GPU) ends with TVIE_SKIP(reason): the
// reason goes to stdout at the start of a line ("SKIPPED [test name]: reason", which scripts/test.sh collects) and
// the test case returns. main() ends a run whose every test case skipped, and none failed, with exit code 77, which
// ctest reports as "Skipped" (SKIP_RETURN_CODE), never as "Passed". TVIE_SKIP_PART(reason) says that a part of a test
// could not run here while the rest goes on ("SKIPPED PART [test name]: reason"); the test's result is the rest's.
// Both count as an assertion, so that Catch's NoAssertions check (every ctest entry) fails only a test that ends
// without asserting anything and without saying why.
struct Skip {
  std::string test;
  std::string reason;
  bool whole = true;  // the test case ends here (TVIE_SKIP), not a part of it (TVIE_SKIP_PART)
};
inline std::vector<Skip>& recorded_skips() {
  static std::vector<Skip> skips;
  return skips;
}
inline void record_skip(const std::string& reason, bool whole) {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  recorded_skips().push_back({name, reason, whole});
  std::cout << (whole ? "SKIPPED [" : "SKIPPED PART [") << name << "]: " << reason << std::endl;
}

#define TVIE_SKIP_RECORD_(reason, whole)                           \
  do {                                                             \
    std::ostringstream tvie_skip_reason_;                          \
    tvie_skip_reason_ << reason; /* NOLINT: a stream expression */ \
    ::tvie::test::record_skip(tvie_skip_reason_.str(), whole);     \
    SUCCEED("skipped: " << tvie_skip_reason_.str());               \
  } while (0)
#define TVIE_SKIP(reason)            \
  do {                               \
    TVIE_SKIP_RECORD_(reason, true); \
    return;                          \
  } while (0)
#define TVIE_SKIP_PART(reason) TVIE_SKIP_RECORD_(reason, false)

// A [gpu] test run on a machine without CUDA: ctest runs each test alone and main() skips it with exit
// code 77 before it starts; in a whole-binary run it is skipped here (fails under TVIE_REQUIRE_GPU=1).
#define TVIE_REQUIRE_CUDA()                                                                    \
  do {                                                                                         \
    if (!tvie::cuda_available()) {                                                             \
      if (tvie::test::gpu_required()) FAIL("TVIE_REQUIRE_GPU=1 but no CUDA device is usable"); \
      TVIE_SKIP("needs a CUDA device; torch::cuda::is_available() is false here");             \
    }                                                                                          \
  } while (0)

// TVIE_REQUIRE_BROWSER=1 (CI): a [browser] test without chromium fails instead of being skipped.
inline bool browser_required() {
  const char* v = std::getenv("TVIE_REQUIRE_BROWSER");
  return v != nullptr && std::string(v) == "1";
}

// Headless Chromium for the [browser] tests: $TVIE_CHROMIUM, else chromium / chromium-browser / google-chrome on
// the PATH; "" when there is none.
inline std::string chromium_path() {
  if (const char* v = std::getenv("TVIE_CHROMIUM"); v != nullptr && *v != '\0') return v;
  const char* path = std::getenv("PATH");
  std::string rest = path ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::filesystem::path dir = rest.substr(0, colon);
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
      if (std::filesystem::exists(dir / name)) return (dir / name).string();
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
  return "";
}

// The whole of a text file ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Removes a directory with everything in it (nothing when it is not there), by POSIX nftw, not
// std::filesystem::remove_all: the LibTorch 2.11 build of the GPU machine exports a remove_all of its own from
// libtorch.so, which the tests bind to before libstdc++'s, and which jumps to address 0 (cuda-gdb's backtrace of
// the H200 check of 2026-12-04: `plan --measure` test, all 21 assertions passed, SIGSEGV in TempDir's destructor).
// scripts/lint.sh keeps std::filesystem::remove_all out of the sources.
inline void remove_tree(const std::filesystem::path& path) {
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        (void)::remove(p);  // what cannot be removed stays; the walk goes on
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

// A fresh directory under the system's temporary directory, removed with everything in it at scope exit.
struct TempDir {
  explicit TempDir(const std::string& prefix = "tvie-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { remove_tree(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// Sets (or, with nullptr, unsets) environment variables for its lifetime and restores the previous values
// on every path out of the scope, a failed REQUIRE included.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second.has_value())
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A shell command's exit code and its stdout and stderr together.
struct Run {
  int exit_code;
  std::string out;
};
inline Run run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}
// build/bin/tvie with `args`, in a process of its own.
inline Run run_cli(const std::string& args) { return run_command(std::string(TVIE_CLI_PATH) + " " + args); }

// Whether the int8 packs can be checked: glibc's heap statistics are readable (not under AddressSanitizer).
// When not, says so (a skipped part) and returns false.
inline bool packs_measurable() {
  if (tvie::heap_statistics_available()) return true;
  TVIE_SKIP_PART("glibc heap statistics unavailable (AddressSanitizer?): packed weights not measured, not checked");
  return false;
}

inline TrainSettings small_train(OptimizerKind optimizer = OptimizerKind::adamw) {
  TrainSettings s;
  s.batch_size = 4;
  s.steps = 2;
  s.warmup_steps = 0;
  s.optimizer = optimizer;
  s.lr_schedule = LrSchedule::constant;  // tests compare runs step for step; the schedule has tests of its own
  return s;
}

// The ledger steps only (Trainer::ledger_step): the measured categories and the peak of two steps.
inline TrainingMemory measure_ledger(const Workload& w, const TrainSettings& s, const c10::Device& device) {
  auto probe = make_memory_probe(device);
  Trainer trainer(w, s, device, probe.get());
  return trainer.ledger_step(*probe);
}

// A short decoding run: `batch` sequences of a `prompt`-token prompt and `new_tokens` generated, timed `repetitions`
// times.
inline DecodeSettings small_decode(int64_t batch, int64_t prompt, int64_t new_tokens, int64_t repetitions) {
  DecodeSettings s;
  s.batch_size = batch;
  s.prompt_tokens = prompt;
  s.new_tokens = new_tokens;
  s.repetitions = repetitions;
  return s;
}

inline InferSettings small_infer() {
  InferSettings s;
  s.batch_size = 4;
  s.steps = 2;
  s.warmup_steps = 0;
  return s;
}

}  // namespace tvie::test
