#pragma once
// Reads back the JUnit XML that `fabric-chaos run` writes, for the unit and privileged tests: a
// tiny well-formedness-checking XML reader (elements, attributes, text, the five entities and
// numeric references), the counts check, and `xmllint --schema tests/client/junit.xsd`.
// Test-only; single-threaded.

#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::testing {

struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<XmlNode> children;
  std::string text;

  std::string attr(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? "" : it->second;
  }
  std::vector<const XmlNode*> all(const std::string& child) const {
    std::vector<const XmlNode*> out;
    for (const XmlNode& c : children) {
      if (c.name == child) out.push_back(&c);
    }
    return out;
  }
  const XmlNode* first(const std::string& child) const {
    for (const XmlNode& c : children) {
      if (c.name == child) return &c;
    }
    return nullptr;
  }
  // <properties><property name=key value=.../></properties>
  std::optional<std::string> property(const std::string& key) const {
    const XmlNode* props = first("properties");
    if (props == nullptr) return std::nullopt;
    for (const XmlNode* p : props->all("property")) {
      if (p->attr("name") == key) return p->attr("value");
    }
    return std::nullopt;
  }
};

class XmlReader {
 public:
  // The root element, or nullopt with error() saying where the document is not well-formed.
  std::optional<XmlNode> parse(const std::string& text) {
    s_ = text;
    pos_ = 0;
    error_.clear();
    if (s_.compare(0, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>");
      if (end == std::string::npos) {
        fail("unterminated XML declaration");
        return std::nullopt;
      }
      pos_ = end + 2;
    }
    skipSpace();
    XmlNode root;
    if (!element(root)) return std::nullopt;
    skipSpace();
    if (pos_ != s_.size()) {
      fail("text after the root element");
      return std::nullopt;
    }
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const std::string& why) {
    error_ = why + " at byte " + std::to_string(pos_);
    return false;
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::string name() {
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
            s_[pos_] == '_' || s_[pos_] == ':' || s_[pos_] == '.')) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }
  bool decode(const std::string& raw, std::string& out) {
    out.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '<') return false;
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      const size_t semi = raw.find(';', i);
      if (semi == std::string::npos) return false;
      const std::string entity = raw.substr(i + 1, semi - i - 1);
      if (entity == "amp") {
        out += '&';
      } else if (entity == "lt") {
        out += '<';
      } else if (entity == "gt") {
        out += '>';
      } else if (entity == "quot") {
        out += '"';
      } else if (entity == "apos") {
        out += '\'';
      } else if (entity.size() > 1 && entity[0] == '#') {
        const long code = entity[1] == 'x' ? std::strtol(entity.c_str() + 2, nullptr, 16)
                                           : std::strtol(entity.c_str() + 1, nullptr, 10);
        if (code <= 0 || code > 0x7f) return false;  // enough for what the writer emits
        out += static_cast<char>(code);
      } else {
        return false;
      }
      i = semi;
    }
    return true;
  }
  bool element(XmlNode& node) {
    if (pos_ >= s_.size() || s_[pos_] != '<') return fail("expected <");
    ++pos_;
    node.name = name();
    if (node.name.empty()) return fail("expected an element name");
    while (true) {
      skipSpace();
      if (pos_ >= s_.size()) return fail("unterminated start tag");
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        return true;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      const std::string key = name();
      if (key.empty() || pos_ + 1 >= s_.size() || s_[pos_] != '=' || s_[pos_ + 1] != '"') {
        return fail("bad attribute in <" + node.name + ">");
      }
      pos_ += 2;
      const size_t close = s_.find('"', pos_);
      if (close == std::string::npos) return fail("unterminated attribute");
      std::string value;
      if (!decode(s_.substr(pos_, close - pos_), value)) {
        return fail("bad character or entity in attribute " + key);
      }
      if (node.attributes.count(key) > 0) return fail("duplicate attribute " + key);
      node.attributes[key] = value;
      pos_ = close + 1;
    }
    while (true) {
      const size_t lt = s_.find('<', pos_);
      if (lt == std::string::npos) return fail("unterminated <" + node.name + ">");
      std::string text;
      if (!decode(s_.substr(pos_, lt - pos_), text)) {
        return fail("bad entity in the text of <" + node.name + ">");
      }
      node.text += text;
      pos_ = lt;
      if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        if (name() != node.name || pos_ >= s_.size() || s_[pos_] != '>') {
          return fail("mismatched end tag for <" + node.name + ">");
        }
        ++pos_;
        return true;
      }
      XmlNode child;
      if (!element(child)) return false;
      node.children.push_back(std::move(child));
    }
  }

  std::string s_;
  size_t pos_ = 0;
  std::string error_;
};

// "" when the <testsuite>'s counts agree with its testcases, else what disagrees.
inline std::string junitCountsProblem(const XmlNode& suite) {
  if (suite.name != "testsuite") return "root is <" + suite.name + ">, not <testsuite>";
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const XmlNode* c : suite.all("testcase")) {
    ++tests;
    failures += c->first("failure") ? 1 : 0;
    errors += c->first("error") ? 1 : 0;
    skipped += c->first("skipped") ? 1 : 0;
  }
  std::string problem;
  auto check = [&](const char* key, int counted) {
    if (suite.attr(key) != std::to_string(counted)) {
      problem += std::string(key) + "=\"" + suite.attr(key) + "\" but " + std::to_string(counted) +
                 " counted; ";
    }
  };
  check("tests", tests);
  check("failures", failures);
  check("errors", errors);
  check("skipped", skipped);
  return problem;
}

struct SchemaCheck {
  bool ran = false;  // false: xmllint is not installed
  bool valid = false;
  std::string output;
};

// xmllint --noout --schema XSD FILE.
inline SchemaCheck validateJunitSchema(const std::string& xml_path, const std::string& xsd_path) {
  SchemaCheck check;
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) return check;
  check.ran = true;
  const std::string command = "xmllint --noout --schema '" + xsd_path + "' '" + xml_path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return check;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) check.output += buffer;
  const int status = pclose(pipe);
  check.valid = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return check;
}

inline std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace fabric_chaos::testing
