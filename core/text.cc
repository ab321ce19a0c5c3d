#include "core/text.h"

#include <fstream>
#include <iterator>

namespace fabric_chaos::core {

std::string trimWhitespace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(kSpace) - first + 1));
}

std::string readTrimmedFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  return trimWhitespace(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

}  // namespace fabric_chaos::core
