// The spdlog wrapper. This translation unit must not include LibTorch headers (see lib/CMakeLists.txt).
#include <tvie/log.hpp>

#include <atomic>

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
  if (enabled(Level::debug)) logger().debug(message);
}
void info(const std::string& message) {
  if (enabled(Level::info)) logger().info(message);
}
void warn(const std::string& message) {
  if (enabled(Level::warn)) logger().warn(message);
}
void error(const std::string& message) {
  if (enabled(Level::error)) logger().error(message);
}

}  // namespace tvie::log
