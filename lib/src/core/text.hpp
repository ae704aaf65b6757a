// Small text helpers for messages.
#pragma once

#include <string>
#include <vector>

namespace tvie::detail {

// "a, b, c"
inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Up to the first newline: LibTorch's and Gloo's messages carry backtraces and hints after it.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace tvie::detail
