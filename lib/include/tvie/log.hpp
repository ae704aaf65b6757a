// The one logging wrapper (spdlog underneath). Messages are plain strings: format them with
// tvie::cat(...) or std::ostringstream. In multi-process runs only rank 0 prints unless asked.
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace tvie::log {

enum class Level { debug, info, warn, error, off };

void set_level(Level level);
Level level();
// rank: this process's rank; all_ranks: print on every rank (default: rank 0 only).
void set_rank(int rank, bool all_ranks = false);

void debug(const std::string& message);
void info(const std::string& message);
void warn(const std::string& message);
void error(const std::string& message);

}  // namespace tvie::log

namespace tvie {
// cat(a, b, c): the arguments streamed into one string.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace tvie
