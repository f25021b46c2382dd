// Schema compilation: one SchemaCompiler per schema document (its $ref memo), all into one Grammar.
#include "src/chat/grammar_compile.h"

#include <set>

#include "src/chat/grammar_marker_filter.h"
#include "src/chat/json_text.h"
#include "src/chat/number_schema.h"
#include "src/chat/object_keys.h"
#include "src/chat/schema_validator.h"
#include "src/chat/string_schema.h"

namespace k3::chat::grammar {

using nlohmann::json;

std::vector<int> TextSymbols(std::string_view text) {
  std::vector<int> symbols;
  symbols.reserve(text.size());
  for (char c : text) symbols.push_back(static_cast<uint8_t>(c));
  return symbols;
}

namespace {

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

// Keywords whose constraints the grammar cannot express; value = the value that constrains nothing.
const std::map<std::string, json>& UnsupportedKeywords() {
  static const std::map<std::string, json> keywords = {
      {"if", json()},
      {"propertyNames", json()},
      {"dependentRequired", json::object()},
      {"dependentSchemas", json::object()},
      {"dependencies", json::object()},
      {"contains", json()},
      {"minContains", json()},
      {"maxContains", json()},
      {"unevaluatedProperties", true},
      {"unevaluatedItems", true},
      {"$dynamicRef", json()},
      {"$recursiveRef", json()},
  };
  return keywords;
}

// Keywords that constrain the value (so they cannot sit beside $ref / anyOf, which we do not intersect).
constexpr std::string_view kConstraining[] = {"type",
                                              "properties",
                                              "required",
                                              "additionalProperties",
                                              "items",
                                              "minItems",
                                              "maxItems",
                                              "enum",
                                              "const",
                                              "anyOf",
                                              "oneOf",
                                              "$ref",
                                              "allOf",
                                              "minimum",
                                              "maximum",
                                              "exclusiveMinimum",
                                              "exclusiveMaximum",
                                              "multipleOf",
                                              "prefixItems",
                                              "minProperties",
                                              "maxProperties",
                                              "patternProperties"};

constexpr std::string_view kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

bool ValueHasType(const json& value, std::string_view type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number_integer();
  if (type == "string") return value.is_string();
  return false;
}

}  // namespace

bool ContainsMarker(std::string_view text) {
  uint8_t state = kFilterStart;
  for (char c : text) {
    state = FilterNext(state, static_cast<uint8_t>(c));
    if (state == kFilterReject) return true;
  }
  return false;
}

std::string MarkerSafeJson(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  ReplaceAll(text, "<|", "\\u003c|");
  ReplaceAll(text, "[EOS]", "\\u005bEOS]");
  return text;
}

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& builder, const json& document, std::string where)
      : b_(builder), document_(document), where_(std::move(where)) {}

  Result<uint32_t> Compile(const json& s, const std::string& ptr, int depth) {
    if (depth > kMaxSchemaNesting) {
      return Error(ptr, fmt::format("schema nested deeper than {} levels", kMaxSchemaNesting));
    }
    if (s.is_boolean()) return s.get<bool>() ? b_.AnyValue() : b_.Never();
    if (!s.is_object()) return Error(ptr, "a schema must be an object or a boolean");
    for (const auto& [keyword, neutral] : UnsupportedKeywords()) {
      if (s.contains(keyword) && (neutral.is_null() || s[keyword] != neutral)) {
        return Error(ptr, fmt::format("keyword '{}' is not supported in constrained output", keyword));
      }
    }
    if (s.contains("not")) {
      // The grammar enforces `not` where it is exact (ExcludeNotTypes, NotExcludedValues); the rest is the
      // end check's (schema_validator.h). Compiling the subschema checks that it uses only the keywords and
      // patterns constrained output knows, so the end check reads it with the meaning it has.
      K3_RETURN_IF_ERROR(Compile(s["not"], ptr + "/not", depth + 1).status());
    }
    for (std::string_view combinator : {"$ref", "allOf", "anyOf", "oneOf"}) {
      if (!s.contains(combinator)) continue;
      for (std::string_view other : kConstraining) {
        if (other != combinator && s.contains(other)) {
          return Error(ptr, fmt::format("'{}' beside '{}' is not supported (move it into the subschemas)",
                                        other, combinator));
        }
      }
    }
    if (s.contains("$ref")) return Ref(s["$ref"], ptr + "/$ref", depth);
    if (s.contains("allOf")) {
      const json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1) {
        return Error(ptr + "/allOf", "allOf is supported only with exactly one subschema");
      }
      return Compile(all[0], ptr + "/allOf/0", depth + 1);
    }
    for (std::string_view any_key : {"anyOf", "oneOf"}) {
      if (!s.contains(any_key)) continue;
      const json& alternatives = s[any_key];
      const std::string at = ptr + "/" + std::string(any_key);
      if (!alternatives.is_array() || alternatives.empty()) return Error(at, "must be a non-empty array");
      std::vector<uint32_t> children;
      for (size_t i = 0; i < alternatives.size(); ++i) {
        K3_ASSIGN_OR_RETURN(uint32_t child,
                            Compile(alternatives[i], at + "/" + std::to_string(i), depth + 1));
        children.push_back(child);
      }
      return b_.Union(std::move(children));
    }
    K3_ASSIGN_OR_RETURN(std::vector<std::string> types, Types(s, ptr));
    ExcludeNotTypes(s, &types);
    if (types.empty()) return b_.Never();
    if (s.contains("const") || s.contains("enum")) return Literals(s, ptr, types);
    std::vector<uint32_t> alternatives;
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    for (const std::string& type : types) {
      if (type == "null") {
        alternatives.push_back(NotExcludedValues(s, {json()}));
      } else if (type == "boolean") {
        alternatives.push_back(NotExcludedValues(s, {json(true), json(false)}));
      } else if (type == "number" || (type == "integer" && !has_number)) {
        Node node;
        node.kind = NodeKind::kNumber;
        node.integer = type == "integer";
        if (HasNumberKeywords(s)) {
          auto dfa = CompileNumberKeywords(s, node.integer, "#" + ptr);
          if (!dfa.ok()) return dfa.status().WithPrefix(where_);
          node.dfa = std::move(dfa).value();
        }
        alternatives.push_back(b_.Add(std::move(node)));
      } else if (type == "string") {
        Node node;
        node.kind = NodeKind::kString;
        if (HasStringKeywords(s)) {
          auto dfa = CompileStringKeywords(s, "#" + ptr);
          if (!dfa.ok()) return dfa.status().WithPrefix(where_);
          if ((*dfa)->Empty()) {
            alternatives.push_back(b_.Never());
            continue;
          }
          node.string_mode = StringMode::kRegex;
          node.dfa = std::move(dfa).value();
        }
        alternatives.push_back(b_.Add(std::move(node)));
      } else if (type == "object") {
        K3_ASSIGN_OR_RETURN(uint32_t object, Object(s, ptr, depth, /*args_mode=*/false));
        alternatives.push_back(object);
      } else if (type == "array") {
        K3_ASSIGN_OR_RETURN(uint32_t array, Array(s, ptr, depth));
        alternatives.push_back(array);
      }
    }
    return alternatives.size() == 1 ? alternatives[0] : b_.Union(std::move(alternatives));
  }

  Result<uint32_t> Object(const json& s, const std::string& ptr, int depth, bool args_mode) {
    Node node;
    node.kind = NodeKind::kObject;
    node.args_mode = args_mode;
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) return Error(ptr + "/required", "must be an array of strings");
      for (const json& name : r) {
        if (!name.is_string()) return Error(ptr + "/required", "must be an array of strings");
        required.insert(name.get<std::string>());
      }
    }
    // patternProperties: keys matching a pattern take its schema (patterns, pattern_values).
    std::vector<std::string> patterns;
    std::vector<uint32_t> pattern_values;
    std::vector<regex::ByteDfa> pattern_matchers;  // unfiltered, to test declared names
    if (s.contains("patternProperties")) {
      const json& pp = s["patternProperties"];
      if (!pp.is_object()) return Error(ptr + "/patternProperties", "must be an object");
      for (const auto& [pattern, sub] : pp.items()) {
        const std::string at = ptr + "/patternProperties/" + JsonPointerToken(pattern);
        regex::RegexOptions options;
        options.max_dfa_states = kMaxStringDfaStates;
        auto matcher = regex::CompileRegex(pattern, options);
        if (!matcher.ok())
          return matcher.status().WithPrefix(fmt::format("{}: patternProperties at #{}", where_, at));
        K3_ASSIGN_OR_RETURN(uint32_t value, Compile(sub, at, depth + 1));
        patterns.push_back(pattern);
        pattern_values.push_back(value);
        pattern_matchers.push_back(std::move(matcher).value());
      }
    }
    // The pattern a declared name matches (-1: none); two or more cannot be intersected.
    const auto pattern_of = [&](const std::string& name, const std::string& at) -> Result<int> {
      int found = -1;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (!pattern_matchers[i].Matches(name)) continue;
        if (found >= 0) {
          return Error(at, fmt::format("'{}' matches the patternProperties '{}' and '{}', whose schemas "
                                       "constrained output does not intersect",
                                       name, patterns[static_cast<size_t>(found)], patterns[i]));
        }
        found = static_cast<int>(i);
      }
      return found;
    };
    int64_t extra_value = -1;
    if (!s.contains("additionalProperties")) {
      // Beside patternProperties only keys matching a pattern are generated (a subset of what the
      // schema allows, the one a dict with a key pattern means).
      if (patterns.empty()) extra_value = b_.AnyValue();
    } else {
      const json& a = s["additionalProperties"];
      if (!a.is_boolean() && !a.is_object()) {
        return Error(ptr + "/additionalProperties", "must be a boolean or a schema");
      }
      if (!(a.is_boolean() && !a.get<bool>())) {
        K3_ASSIGN_OR_RETURN(extra_value, Compile(a, ptr + "/additionalProperties", depth + 1));
      }
    }
    std::vector<std::pair<std::string, uint32_t>> values;  // declared members with their value nodes
    std::set<std::string> declared;
    if (s.contains("properties")) {
      const json& properties = s["properties"];
      if (!properties.is_object()) return Error(ptr + "/properties", "must be an object");
      for (const auto& [name, sub] : properties.items()) {
        const std::string at = ptr + "/properties/" + JsonPointerToken(name);
        K3_ASSIGN_OR_RETURN(uint32_t value, Compile(sub, at, depth + 1));
        K3_ASSIGN_OR_RETURN(int pattern, pattern_of(name, at));
        if (pattern >= 0) {
          return Error(at, fmt::format("property '{}' also matches patternProperties '{}', whose schemas "
                                       "constrained output does not intersect",
                                       name, patterns[static_cast<size_t>(pattern)]));
        }
        values.emplace_back(name, value);
        declared.insert(name);
      }
    }
    for (const std::string& name : required) {
      if (declared.count(name) > 0) continue;
      K3_ASSIGN_OR_RETURN(int pattern, pattern_of(name, ptr + "/required"));
      if (pattern >= 0) {
        values.emplace_back(name, pattern_values[static_cast<size_t>(pattern)]);
      } else {
        values.emplace_back(name, extra_value >= 0 ? static_cast<uint32_t>(extra_value) : b_.Never());
      }
      declared.insert(name);
    }
    for (std::string_view key : {"minProperties", "maxProperties"}) {
      if (!s.contains(key)) continue;
      const json& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 0xFFFFFFFFll) {
        return Error(ptr + "/" + std::string(key), "must be a non-negative integer");
      }
      (key == "minProperties" ? node.min_properties : node.max_properties) = v.get<uint32_t>();
    }
    if (node.min_properties > node.max_properties) {
      return Error(ptr + "/minProperties", fmt::format("minProperties {} is above maxProperties {}",
                                                       node.min_properties, node.max_properties));
    }
    for (auto& [name, value] : values) {
      Node::Member member;
      member.name = name;
      member.required = required.count(name) > 0;
      if (args_mode) {
        std::vector<int> open = {kSymOpen};
        for (int c : TextSymbols("argument key=\"" + EscapeAttribute(name) + "\" type=\"")) open.push_back(c);
        member.node = b_.Seq({b_.Literal(std::move(open)), b_.ArgumentValue(value)});
      } else {
        member.node = b_.Seq({b_.Literal(TextSymbols(MarkerSafeJson(json(name)) + ":")), value});
      }
      node.members.push_back(std::move(member));
    }
    std::vector<uint32_t> extras;  // additional-member alternatives
    SymbolTrie declared_names;
    for (const std::string& name : declared) declared_names.Insert(TextSymbols(name));
    // Keys as kRegex strings (with their quotes); in args mode after `key=`, before ` type="`.
    const auto regex_member = [&](std::shared_ptr<const regex::ByteDfa> dfa, uint32_t value) {
      Node key;
      key.kind = NodeKind::kString;
      key.string_mode = StringMode::kRegex;
      key.dfa = std::move(dfa);
      const uint32_t key_node = b_.Add(std::move(key));
      if (!args_mode) return b_.Seq({key_node, b_.Literal(TextSymbols(":")), value});
      std::vector<int> open = {kSymOpen};
      for (int c : TextSymbols("argument key=")) open.push_back(c);
      return b_.Seq({b_.Literal(std::move(open)), key_node, b_.Literal(TextSymbols(" type=\"")),
                     b_.ArgumentValue(value)});
    };
    for (int i = 0; i <= static_cast<int>(patterns.size()); ++i) {
      const bool additional = i == static_cast<int>(patterns.size());
      if (additional && (patterns.empty() || extra_value < 0)) break;
      const std::string at = ptr + (additional ? "/additionalProperties" : "/patternProperties");
      auto dfa = ObjectKeyDfa(patterns, additional ? -1 : i, declared_names, args_mode, "keys at #" + at);
      if (!dfa.ok()) return dfa.status().WithPrefix(where_);
      if ((*dfa)->Empty()) continue;  // no key can be written (e.g. only with escapes)
      extras.push_back(regex_member(std::move(dfa).value(), additional
                                                                ? static_cast<uint32_t>(extra_value)
                                                                : pattern_values[static_cast<size_t>(i)]));
    }
    if (!extras.empty()) node.extra_member = extras.size() == 1 ? extras[0] : b_.Union(std::move(extras));
    if (extra_value >= 0 && patterns.empty()) {
      Node key;
      key.kind = NodeKind::kString;
      key.string_mode = args_mode ? StringMode::kAttr : StringMode::kJsonKey;
      for (const std::string& name : declared) key.excluded.Insert(TextSymbols(name));
      const uint32_t key_node = b_.Add(std::move(key));
      const auto extra = static_cast<uint32_t>(extra_value);
      if (args_mode) {
        std::vector<int> open = {kSymOpen};
        for (int c : TextSymbols("argument key=\"")) open.push_back(c);
        node.extra_member = b_.Seq({b_.Literal(std::move(open)), key_node,
                                    b_.Literal(TextSymbols(" type=\"")), b_.ArgumentValue(extra)});
      } else {
        node.extra_member = b_.Seq({key_node, b_.Literal(TextSymbols(":")), extra});
      }
    }
    node.next_required.assign(node.members.size() + 1, static_cast<uint32_t>(node.members.size()));
    for (size_t i = node.members.size(); i-- > 0;) {
      node.next_required[i] = node.members[i].required ? static_cast<uint32_t>(i) : node.next_required[i + 1];
    }
    return b_.Add(std::move(node));
  }

 private:
  Status Error(const std::string& ptr, const std::string& what) const {
    return InvalidArgument("{}: {} at #{}", where_, what, ptr);
  }

  Result<uint32_t> Ref(const json& ref, const std::string& ptr, int depth) {
    if (!ref.is_string()) return Error(ptr, "$ref must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') {
      return Error(ptr, fmt::format("$ref '{}' is not supported (only references into this schema, \"#...\")",
                                    target));
    }
    const std::string pointer = target.substr(1);
    if (auto it = refs_.find(pointer); it != refs_.end()) return it->second;
    const json* resolved = nullptr;
    try {
      const json::json_pointer json_pointer(pointer);
      if (document_.contains(json_pointer)) resolved = &document_.at(json_pointer);
    } catch (const json::exception&) {
      resolved = nullptr;
    }
    if (resolved == nullptr) return Error(ptr, fmt::format("$ref '{}' does not resolve", target));
    // A forwarding union, registered before compiling the target so recursive references close the loop.
    const uint32_t forward = b_.Union({});
    refs_[pointer] = forward;
    K3_ASSIGN_OR_RETURN(uint32_t compiled, Compile(*resolved, pointer, depth + 1));
    b_.grammar_.nodes[forward].children = {compiled};
    return forward;
  }

  Result<std::vector<std::string>> Types(const json& s, const std::string& ptr) const {
    std::vector<std::string> types;
    if (!s.contains("type")) {
      for (std::string_view type : kTypes) types.emplace_back(type);
      return types;
    }
    const json& t = s["type"];
    const json list = t.is_array() ? t : json::array({t});
    for (const json& type : list) {
      const bool known = type.is_string() && std::find(std::begin(kTypes), std::end(kTypes),
                                                       type.get<std::string>()) != std::end(kTypes);
      if (!known) return Error(ptr + "/type", fmt::format("unknown type {}", type.dump()));
      types.push_back(type.get<std::string>());
    }
    if (types.empty()) return Error(ptr + "/type", "must name at least one type");
    return types;
  }

  Result<uint32_t> Literals(const json& s, const std::string& ptr, const std::vector<std::string>& types) {
    std::vector<json> values;
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty())
        return Error(ptr + "/enum", "must be a non-empty array");
      values.assign(s["enum"].begin(), s["enum"].end());
    }
    if (s.contains("const")) {
      const json& c = s["const"];
      if (s.contains("enum")) {
        const bool listed = std::find(values.begin(), values.end(), c) != values.end();
        values.clear();
        if (listed) values.push_back(c);
      } else {
        values.push_back(c);
      }
    }
    std::vector<json> typed;
    for (const json& value : values) {
      for (const std::string& type : types) {
        if (ValueHasType(value, type)) {
          typed.push_back(value);
          break;
        }
      }
    }
    return NotExcludedValues(s, std::move(typed));
  }

  // A `not` whose subschema is only a type (or list of types) excludes those types exactly: they are
  // dropped here (integer with number, as integers are numbers).
  static void ExcludeNotTypes(const json& s, std::vector<std::string>* types) {
    if (!s.contains("not") || !s["not"].is_object() || !s["not"].contains("type")) return;
    for (const auto& [key, value] : s["not"].items()) {
      if (key != "type" && key != "title" && key != "description" && key != "$comment") return;
    }
    const json& t = s["not"]["type"];
    for (const json& type : t.is_array() ? t : json::array({t})) {
      if (!type.is_string()) return;
    }
    std::erase_if(*types, [&t](const std::string& type) {
      const auto excluded = [&t](std::string_view name) {
        return t.is_array() ? std::find(t.begin(), t.end(), name) != t.end() : t == name;
      };
      return excluded(type) || (type == "integer" && excluded("number"));
    });
  }

  // The literal set of `values` less those the schema's `not` excludes (exact: each value is checked
  // against the subschema), or Never when none is left.
  uint32_t NotExcludedValues(const json& s, std::vector<json> values) {
    if (s.contains("not")) {
      std::erase_if(values, [&](const json& value) {
        return !FindSchemaViolation(document_, s["not"], value).has_value();
      });
    }
    return values.empty() ? b_.Never() : LiteralValues(std::move(values));
  }

  uint32_t LiteralValues(std::vector<json> values) {
    Node node;
    node.kind = NodeKind::kLiteralSet;
    for (const json& value : values) node.literals.Insert(TextSymbols(MarkerSafeJson(value)));
    node.values = std::move(values);
    return b_.Add(std::move(node));
  }

  Result<uint32_t> Array(const json& s, const std::string& ptr, int depth) {
    Node node;
    node.kind = NodeKind::kArray;
    // Tuples: prefixItems (2020-12), or items as an array with additionalItems for the rest (draft 4-7).
    const bool tuple_items = s.contains("items") && s["items"].is_array();
    const char* prefix_key = tuple_items ? "items" : "prefixItems";
    const char* rest_key = tuple_items ? "additionalItems" : "items";
    if (tuple_items && s.contains("prefixItems")) {
      return Error(ptr + "/items",
                   "items as an array beside prefixItems is ambiguous (use items as a schema)");
    }
    if (s.contains(prefix_key)) {
      const json& prefix = s[prefix_key];
      const std::string at = ptr + "/" + prefix_key;
      if (!prefix.is_array()) return Error(at, "must be an array of schemas");
      for (size_t i = 0; i < prefix.size(); ++i) {
        K3_ASSIGN_OR_RETURN(uint32_t item, Compile(prefix[i], at + "/" + std::to_string(i), depth + 1));
        node.prefix_items.push_back(item);
      }
    }
    if (s.contains(rest_key)) {
      K3_ASSIGN_OR_RETURN(node.items, Compile(s[rest_key], ptr + "/" + rest_key, depth + 1));
    } else {
      node.items = b_.AnyValue();
    }
    for (std::string_view key : {"minItems", "maxItems"}) {
      if (!s.contains(key)) continue;
      const json& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 0xFFFFFFFFll) {
        return Error(ptr + "/" + std::string(key), "must be a non-negative integer");
      }
      (key == "minItems" ? node.min_items : node.max_items) = v.get<uint32_t>();
    }
    if (s.contains("uniqueItems")) {
      const json& unique = s["uniqueItems"];
      const std::string at = ptr + "/uniqueItems";
      if (!unique.is_boolean()) return Error(at, "must be a boolean");
      if (unique.get<bool>() && node.max_items > 1) {
        // Enforced for enumerated items only: the frame remembers which values were written.
        uint32_t item = node.items;
        while (b_.grammar_.nodes[item].kind == NodeKind::kUnion &&
               b_.grammar_.nodes[item].children.size() == 1) {
          item = b_.grammar_.nodes[item].children[0];
        }
        Node& literal = b_.grammar_.nodes[item];
        // Other items (and tuples) are left to the end check (schema_validator.h): a grammar cannot
        // compare arbitrary items.
        if (node.prefix_items.empty() && literal.kind == NodeKind::kLiteralSet && !literal.values.empty() &&
            IndexLiterals(literal)) {
          node.items = item;
          node.unique_literals = true;
        }
      }
    }
    return b_.Add(std::move(node));
  }

  GrammarBuilder& b_;
  const json& document_;
  std::string where_;
  std::map<std::string, uint32_t> refs_;
};

uint32_t GrammarBuilder::Add(Node node) {
  grammar_.nodes.push_back(std::move(node));
  return static_cast<uint32_t>(grammar_.nodes.size() - 1);
}

uint32_t GrammarBuilder::Never() {
  if (never_ < 0) never_ = Add(Node{});
  return static_cast<uint32_t>(never_);
}

uint32_t GrammarBuilder::AnyValue() {
  if (any_value_ >= 0) return static_cast<uint32_t>(any_value_);
  const uint32_t any = Union({});
  any_value_ = any;
  Node null_node;
  null_node.kind = NodeKind::kLiteralSet;
  null_node.literals.Insert(TextSymbols("null"));
  null_node.values = {json()};
  Node bool_node;
  bool_node.kind = NodeKind::kLiteralSet;
  bool_node.literals.Insert(TextSymbols("true"));
  bool_node.literals.Insert(TextSymbols("false"));
  bool_node.values = {json(true), json(false)};
  Node number;
  number.kind = NodeKind::kNumber;
  Node string;
  string.kind = NodeKind::kString;
  Node array;
  array.kind = NodeKind::kArray;
  array.items = any;
  std::vector<uint32_t> children = {Add(std::move(null_node)), Add(std::move(bool_node)),
                                    Add(std::move(number)),    Add(std::move(string)),
                                    AnyJsonObject(),           Add(std::move(array))};
  grammar_.nodes[any].children = std::move(children);
  return any;
}

uint32_t GrammarBuilder::AnyJsonObject() {
  if (any_object_ >= 0) return static_cast<uint32_t>(any_object_);
  static const json kEmpty = json::object();
  SchemaCompiler compiler(*this, kEmpty, "json_object");
  auto object = compiler.Object(kEmpty, "", 0, /*args_mode=*/false);
  any_object_ = object.value();  // an empty schema cannot fail
  return static_cast<uint32_t>(any_object_);
}

Result<uint32_t> GrammarBuilder::JsonValue(const json& schema, const std::string& where) {
  SchemaCompiler compiler(*this, schema, where);
  return compiler.Compile(schema, "", 0);
}

Result<uint32_t> GrammarBuilder::ToolArguments(const json& schema, const std::string& where) {
  SchemaCompiler compiler(*this, schema, where);
  if (schema.is_null()) return compiler.Object(json::object(), "", 0, /*args_mode=*/true);
  if (!schema.is_object()) return InvalidArgument("{}: parameters must be a JSON Schema object", where);
  if (schema.contains("type") && schema["type"] != "object") {
    return InvalidArgument("{}: parameters must have \"type\": \"object\" (found {}) at #/type", where,
                           schema["type"].dump());
  }
  for (std::string_view keyword : {"$ref", "anyOf", "oneOf", "allOf", "enum", "const"}) {
    if (schema.contains(keyword)) {
      return InvalidArgument("{}: '{}' at the top of parameters is not supported at #/{}", where, keyword,
                             keyword);
    }
  }
  // The object's own keywords are checked (unsupported ones rejected) by compiling it as a value too.
  K3_RETURN_IF_ERROR(compiler.Compile(schema, "", 0).status());
  return compiler.Object(schema, "", 0, /*args_mode=*/true);
}

uint32_t GrammarBuilder::Literal(std::vector<int> symbols) {
  Node node;
  node.kind = NodeKind::kLiteralSet;
  node.literals.Insert(symbols);
  return Add(std::move(node));
}

uint32_t GrammarBuilder::Seq(std::vector<uint32_t> children) {
  Node node;
  node.kind = NodeKind::kSeq;
  node.children = std::move(children);
  return Add(std::move(node));
}

uint32_t GrammarBuilder::Union(std::vector<uint32_t> children) {
  Node node;
  node.kind = NodeKind::kUnion;
  node.children = std::move(children);
  return Add(std::move(node));
}

uint32_t GrammarBuilder::RawText() {
  if (raw_text_ < 0) {
    Node node;
    node.kind = NodeKind::kRawText;
    raw_text_ = Add(std::move(node));
  }
  return static_cast<uint32_t>(raw_text_);
}

uint32_t GrammarBuilder::CallIndex() {
  Node node;
  node.kind = NodeKind::kCallIndex;
  return Add(std::move(node));
}

uint32_t GrammarBuilder::CallList(uint32_t call, uint32_t max_calls) {
  Node node;
  node.kind = NodeKind::kCallList;
  node.children = {call};
  node.max_calls = max_calls;
  return Add(std::move(node));
}

int64_t GrammarBuilder::Restrict(uint32_t id, std::string_view type) {
  const auto key = std::make_pair(id, std::string(type));
  if (auto it = restricted_.find(key); it != restricted_.end()) return it->second == -2 ? -1 : it->second;
  restricted_[key] = -2;
  int64_t result = -1;
  const Node& node = grammar_.nodes[id];
  switch (node.kind) {
    case NodeKind::kLiteralSet: {
      Node literal;
      literal.kind = NodeKind::kLiteralSet;
      for (const json& value : node.values) {
        const bool matches = type == "number" ? value.is_number() : ValueHasType(value, type);
        if (!matches) continue;
        if (type == "string") {
          const std::string raw = value.get<std::string>();
          if (ContainsMarker(raw)) continue;  // cannot be written raw
          literal.literals.Insert(TextSymbols(raw));
        } else {
          literal.literals.Insert(TextSymbols(MarkerSafeJson(value)));
        }
        literal.values.push_back(value);
      }
      if (!literal.values.empty()) result = Add(std::move(literal));
      break;
    }
    case NodeKind::kString:
      if (type != "string") break;
      if (node.string_mode == StringMode::kJson) {
        result = RawText();  // may grow grammar_.nodes: `node` is not used after this
      } else if (node.string_mode == StringMode::kRegex) {
        Node raw = node;
        raw.string_mode = StringMode::kRegexRaw;
        result = Add(std::move(raw));
      }
      break;
    case NodeKind::kNumber:
      if (type == "number") result = id;
      break;
    case NodeKind::kObject:
      if (type == "object" && !node.args_mode) result = id;
      break;
    case NodeKind::kArray:
      if (type == "array") result = id;
      break;
    case NodeKind::kUnion: {
      std::vector<uint32_t> children;
      const std::vector<uint32_t> alternatives = node.children;  // Restrict may grow nodes
      for (uint32_t child : alternatives) {
        const int64_t r = Restrict(child, type);
        if (r >= 0) children.push_back(static_cast<uint32_t>(r));
      }
      if (children.size() == 1) result = children[0];
      if (children.size() > 1) result = Union(std::move(children));
      break;
    }
    default:
      break;
  }
  restricted_[key] = result;
  return result;
}

uint32_t GrammarBuilder::ArgumentValue(uint32_t value) {
  std::vector<uint32_t> alternatives;
  for (std::string_view type : {"string", "number", "boolean", "null", "object", "array"}) {
    const int64_t restricted = Restrict(value, type);
    if (restricted < 0) continue;
    std::vector<int> head = TextSymbols(std::string(type) + "\"");
    head.push_back(kSymSep);
    std::vector<int> tail = {kSymClose};
    for (int c : TextSymbols("argument")) tail.push_back(c);
    tail.push_back(kSymSep);
    alternatives.push_back(
        Seq({Literal(std::move(head)), static_cast<uint32_t>(restricted), Literal(std::move(tail))}));
  }
  return alternatives.empty() ? Never() : Union(std::move(alternatives));
}

uint32_t GrammarBuilder::RegexText(std::shared_ptr<const regex::ByteDfa> dfa) {
  if (dfa == nullptr || dfa->Empty()) return Never();
  Node node;
  node.kind = NodeKind::kString;
  node.string_mode = StringMode::kRegexRaw;
  node.dfa = std::move(dfa);
  return Add(std::move(node));
}

uint32_t GrammarBuilder::LiteralChoices(const std::vector<std::string>& texts) {
  Node node;
  node.kind = NodeKind::kLiteralSet;
  for (const std::string& text : texts) node.literals.Insert(TextSymbols(text));
  return Add(std::move(node));
}

std::shared_ptr<const Grammar> GrammarBuilder::Finish(uint32_t root) {
  grammar_.root = root;
  ComputeNeeds(grammar_);
  return std::make_shared<const Grammar>(std::move(grammar_));
}

}  // namespace k3::chat::grammar
