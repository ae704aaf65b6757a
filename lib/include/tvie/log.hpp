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

// Progress of a long run (sweeps, searches, slices, serving) on stderr, one line rewritten in place:
// "[tvie] infer sweep 3/18: batch 16, bf16 (12.3 s)". Shown only where stderr is a terminal, at level info or
// lower, on the printing rank: logs, pipes and CI get nothing. A log message clears the line first; the line is
// cleared when the Progress ends.
class Progress {
 public:
  Progress(std::string what, long long total);  // total 0: not known in advance ("probe 3")
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void next(const std::string& item);  // the next item starts
  static bool shown();                 // whether progress goes to stderr in this process

 private:
  std::string what_;
  long long total_ = 0, done_ = 0;
  double start_s_ = 0;
};
// The line itself (pure, for tests).
std::string progress_line(const std::string& what, long long n, long long total, const std::string& item,
                          double elapsed_s);

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
