/// SourceKeys: a small Lua tokenizer (names, strings, comments, brackets) and the key
/// fields it records per table constructor.

#include "config/source_keys.hpp"

#include <cctype>

namespace actorpipe::lua {

namespace {

struct Token {
  enum Kind { name, string, symbol, end } kind = end;
  std::string text;
  int line = 0;
};

/// The level of a long bracket opening at `i` ("[[" 0, "[==[" 2), or -1.
int long_bracket(std::string_view s, std::size_t i) {
  if (i >= s.size() || s[i] != '[') return -1;
  std::size_t j = i + 1;
  while (j < s.size() && s[j] == '=')
    ++j;
  return j < s.size() && s[j] == '[' ? static_cast<int>(j - i - 1) : -1;
}

std::vector<Token> tokens(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  std::size_t i = 0;
  auto skip_long = [&](int level) { // i at the opening bracket
    i += static_cast<std::size_t>(level) + 2;
    const std::string close = "]" + std::string(static_cast<std::size_t>(level), '=') + "]";
    const std::size_t stop = s.find(close, i);
    const std::size_t to = stop == std::string_view::npos ? s.size() : stop + close.size();
    for (; i < to; ++i)
      if (s[i] == '\n') ++line;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      i += 2;
      if (const int level = long_bracket(s, i); level >= 0)
        skip_long(level);
      else
        while (i < s.size() && s[i] != '\n')
          ++i;
    } else if (c == '"' || c == '\'') {
      Token t{Token::string, "", line};
      for (++i; i < s.size() && s[i] != c && s[i] != '\n'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        t.text += s[i];
      }
      ++i;
      out.push_back(std::move(t));
    } else if (const int level = long_bracket(s, i); level >= 0) {
      out.push_back({Token::string, "", line});
      skip_long(level);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      Token t{Token::name, "", line};
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        t.text += s[i++];
      out.push_back(std::move(t));
    } else if (s.substr(i, 2) == "==" || s.substr(i, 2) == "~=" || s.substr(i, 2) == "<=" || s.substr(i, 2) == ">=") {
      out.push_back({Token::symbol, std::string(s.substr(i, 2)), line});
      i += 2;
    } else {
      out.push_back({Token::symbol, std::string(1, c), line});
      ++i;
    }
  }
  out.push_back({Token::end, "", line});
  return out;
}

} // namespace

SourceKeys SourceKeys::scan(std::string_view source) {
  SourceKeys keys;
  keys.scopes_.emplace_back();
  const std::vector<Token> t = tokens(source);
  // Open brackets: '{' opens a scope of its own; '(' and '[' keep the one around them.
  std::vector<std::pair<char, int>> open{{'\0', 0}};
  auto is = [&](std::size_t k, const char* text) { return t[k].kind == Token::symbol && t[k].text == text; };
  for (std::size_t k = 0; t[k].kind != Token::end; ++k) {
    const int scope = open.back().second;
    if (t[k].kind == Token::name && t[k].text == "return" && open.size() == 1) keys.return_line_ = t[k].line;
    // A field or assignment: NAME = … or ["NAME"] = … (not ==).
    std::size_t value = 0;
    std::string name;
    int line = 0;
    if (t[k].kind == Token::name && is(k + 1, "=")) {
      name = t[k].text, line = t[k].line, value = k + 2;
    } else if (is(k, "[") && t[k + 1].kind == Token::string && is(k + 2, "]") && is(k + 3, "=")) {
      name = t[k + 1].text, line = t[k + 1].line, value = k + 4;
    }
    if (value) {
      Field field{name, line, -1};
      if (is(value, "{")) {
        field.scope = static_cast<int>(keys.scopes_.size());
        keys.scopes_.emplace_back();
      }
      keys.scopes_[static_cast<std::size_t>(scope)].push_back(field);
      if (field.scope >= 0) {
        open.push_back({'{', field.scope});
        k = value;
      }
      continue;
    }
    if (is(k, "{")) {
      // A constructor that is no named field's value (an element, an argument,
      // `return {`): its keys belong to the chunk's level, where `return` puts them.
      const bool returned = k > 0 && t[k - 1].kind == Token::name && t[k - 1].text == "return";
      if (returned) {
        open.push_back({'{', 0});
      } else {
        open.push_back({'{', static_cast<int>(keys.scopes_.size())});
        keys.scopes_.emplace_back();
      }
    } else if (is(k, "(") || is(k, "[")) {
      open.push_back({t[k].text[0], scope});
    } else if ((is(k, "}") || is(k, ")") || is(k, "]")) && open.size() > 1) {
      open.pop_back();
    }
  }
  return keys;
}

int SourceKeys::deepest(int scope, const std::vector<std::string>& path, std::size_t at, int& line) const {
  if (at == path.size() || scope < 0) return static_cast<int>(at);
  int best = static_cast<int>(at);
  for (const Field& field : scopes_[static_cast<std::size_t>(scope)]) {
    if (field.name != path[at]) continue;
    int below = field.line;
    const int depth = deepest(field.scope, path, at + 1, below);
    if (depth > best) {
      best = depth;
      line = below;
    }
    if (depth == static_cast<int>(path.size())) break;
  }
  return best;
}

int SourceKeys::line_of(const std::vector<std::string>& path) const {
  int line = return_line_;
  int best = 0;
  // The path may start at any constructor: a table built in pieces (`local plan = {…}`
  // then `return {plan = plan}`) writes its keys where the pieces are.
  for (std::size_t scope = 0; scope < scopes_.size(); ++scope) {
    int found = return_line_;
    const int depth = deepest(static_cast<int>(scope), path, 0, found);
    if (depth > best) {
      best = depth;
      line = found;
    }
  }
  return line;
}

} // namespace actorpipe::lua
