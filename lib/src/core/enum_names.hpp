// Enums as tables: one {value, "name"} table per enum, and the generic name_of / parse / names over it,
// so that the spelling of a value is written once (settings, reports and error messages all read it here).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.hpp"
#include <tvie/errors.hpp>

namespace tvie::detail {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, std::size_t N>
using EnumTable = std::array<EnumName<E>, N>;

template <typename E, std::size_t N>
std::string name_of(const EnumTable<E, N>& table, E value) {
  for (const auto& e : table)
    if (e.value == value) return std::string(e.name);
  return "?";
}

template <typename E, std::size_t N>
std::vector<std::string> names(const EnumTable<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

// The value named `text`; else InvalidArgument(field, text, accepted), where accepted defaults to the
// names in table order.
template <typename E, std::size_t N>
E parse(const EnumTable<E, N>& table, const std::string& text, const std::string& field,
        const std::string& accepted = "") {
  for (const auto& e : table)
    if (e.name == text) return e.value;
  throw InvalidArgument(field, text, accepted.empty() ? join(names(table)) : accepted);
}

}  // namespace tvie::detail
