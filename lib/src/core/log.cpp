// The spdlog wrapper. This translation unit must not include LibTorch headers (see lib/CMakeLists.txt).
#include <tvie/log.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tvie::log {
namespace {

std::atomic<int> g_rank{0};
std::atomic<bool> g_all_ranks{false};
std::atomic<Level> g_level{Level::info};

spdlog::logger& logger() {
  // Messages go to stderr so that stdout carries only the report.
  static auto instance = [] {
    auto made = spdlog::stderr_color_mt("tvie");
    made->set_pattern("[tvie %^%l%$] %v");
    made->set_level(spdlog::level::trace);
    return made;
  }();
  return *instance;
}

std::atomic<bool> g_progress_on_screen{false};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// A progress line on screen is erased before anything else is written to stderr.
void clear_progress() {
  if (g_progress_on_screen.exchange(false)) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

bool enabled(Level at) {
  if (g_rank.load() != 0 && !g_all_ranks.load()) return false;
  return static_cast<int>(at) >= static_cast<int>(g_level.load());
}

}  // namespace

void set_level(Level level) { g_level = level; }
Level level() { return g_level.load(); }
void set_rank(int rank, bool all_ranks) {
  g_rank = rank;
  g_all_ranks = all_ranks;
}

void debug(const std::string& message) {
  if (!enabled(Level::debug)) return;
  clear_progress();
  logger().debug(message);
}
void info(const std::string& message) {
  if (!enabled(Level::info)) return;
  clear_progress();
  logger().info(message);
}
void warn(const std::string& message) {
  if (!enabled(Level::warn)) return;
  clear_progress();
  logger().warn(message);
}
void error(const std::string& message) {
  if (!enabled(Level::error)) return;
  clear_progress();
  logger().error(message);
}

std::string progress_line(const std::string& what, long long n, long long total, const std::string& item,
                          double elapsed_s) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f s", elapsed_s);
  std::string line = "[tvie] " + what + " " + std::to_string(n);
  if (total > 0) line += "/" + std::to_string(total);
  if (!item.empty()) line += ": " + item;
  return line + " (" + elapsed + ")";
}

bool Progress::shown() { return enabled(Level::info) && ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string what, long long total) : what_(std::move(what)), total_(total), start_s_(now_s()) {}

Progress::~Progress() { clear_progress(); }

void Progress::next(const std::string& item) {
  ++done_;
  if (!shown()) return;
  logger().flush();
  const std::string line = progress_line(what_, done_, total_, item, now_s() - start_s_);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  g_progress_on_screen = true;
}

}  // namespace tvie::log
