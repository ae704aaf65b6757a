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

}  // namespace tvie::detail
