// Thinking, tools, tool_choice, response_format and vLLM's guided_json of a chat request.
#include "src/api/chat_options.h"

#include <set>

#include <fmt/format.h>

#include "src/api/vllm_fields.h"

namespace k3::api {
namespace {

// Applies one effort value; false when it is not a known value.
bool ApplyEffort(const std::string& effort, chat::RenderOptions* render) {
  if (effort == "low" || effort == "medium" || effort == "high" || effort == "max") {
    render->thinking_effort = effort;
  } else if (effort == "minimal") {
    render->thinking_effort = "low";
  } else if (effort == "none") {
    render->thinking = false;
  } else {
    return false;
  }
  return true;
}

void ReadEffort(FieldReader& fields, std::string_view key, chat::RenderOptions* render) {
  const auto effort = fields.String(key);
  if (effort && !ApplyEffort(*effort, render)) {
    fields.Fail(fields.Path(key),
                fmt::format("expected one of none, minimal, low, medium, high, max, got \"{}\"", *effort));
  }
}

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}].
void CheckTools(FieldReader& fields, const nlohmann::json& tools, std::set<std::string>* names) {
  for (size_t i = 0; i < tools.size() && fields.ok(); ++i) {
    const std::string path = fmt::format("tools[{}]", i);
    if (!tools[i].is_object()) {
      fields.Fail(path, std::string("expected a tool object, got ") + JsonTypeName(tools[i]));
      return;
    }
    FieldReader tool = fields.Nested(tools[i], path);
    if (const auto type = tool.String("type"); type && *type != "function")
      tool.Fail(tool.Path("type"), fmt::format("expected \"function\", got \"{}\"", *type));
    const nlohmann::json* function = tool.Object("function");
    if (!fields.ok()) return;
    if (function == nullptr) {
      tool.Fail(tool.Path("function"), "required (an object with a name)");
      return;
    }
    FieldReader fn = tool.Nested(*function, tool.Path("function"));
    const auto name = fn.String("name");
    if (fn.ok() && (!name || name->empty())) fn.Fail(fn.Path("name"), "required (a non-empty string)");
    fn.String("description");
    fn.Object("parameters");
    fn.Bool("strict");
    if (fields.ok()) names->insert(*name);
  }
}

void ReadTools(FieldReader& fields, const ServerContext& ctx, ChatOptions* options) {
  const nlohmann::json* tools = fields.Array("tools");
  std::set<std::string> names;
  if (tools != nullptr) CheckTools(fields, *tools, &names);
  if (const auto parallel = fields.Bool("parallel_tool_calls")) options->parallel_tool_calls = *parallel;
  if (!fields.ok()) return;
  const bool has_tools = tools != nullptr && !tools->empty();

  std::string choice = has_tools ? "auto" : "none";
  if (const nlohmann::json* value = fields.Get("tool_choice")) {
    if (value->is_string()) {
      choice = value->get<std::string>();
      if (choice != "none" && choice != "auto" && choice != "required") {
        fields.Fail(
            "tool_choice",
            fmt::format("expected \"none\", \"auto\", \"required\" or a named function, got \"{}\"", choice));
        return;
      }
    } else if (value->is_object()) {
      FieldReader named = fields.Nested(*value, "tool_choice");
      if (const auto type = named.String("type"); type && *type != "function")
        named.Fail(named.Path("type"), fmt::format("expected \"function\", got \"{}\"", *type));
      const nlohmann::json* function = named.Object("function");
      if (!fields.ok()) return;
      const auto name =
          function ? named.Nested(*function, "tool_choice.function").String("name") : std::nullopt;
      if (!fields.ok()) return;
      if (!name || name->empty()) {
        fields.Fail("tool_choice.function.name", "required: the name of the function to call");
        return;
      }
      choice = "named";
      options->forced_function = *name;
    } else {
      fields.Fail("tool_choice", std::string("expected a string or an object, got ") + JsonTypeName(*value));
      return;
    }
  }
  if (!has_tools && (choice == "required" || choice == "named")) {
    fields.Fail("tool_choice",
                "`tools` must be set (and non-empty) when tool_choice is \"required\" or names "
                "a function");
    return;
  }
  if (choice == "named" && names.count(options->forced_function) == 0) {
    fields.Fail("tool_choice.function.name",
                fmt::format("no tool named \"{}\" is declared in `tools`", options->forced_function));
    return;
  }
  if (choice == "auto" && has_tools && !ctx.enable_auto_tool_choice) {
    fields.Fail("tool_choice",
                "\"auto\" tool choice requires the server to be started with --enable-auto-tool-choice "
                "(and --tool-call-parser kimi_k3)");
    return;
  }
  if (has_tools) options->render.tools = *tools;
  options->parser.tools_enabled = has_tools && choice != "none";
  options->tool_call_required = choice == "required" || choice == "named";
  if (options->tool_call_required) {
    options->render.tool_choice = "required";
  } else if (choice == "none" && has_tools) {
    options->render.tool_choice = "none";
  }
}

void ReadResponseFormat(FieldReader& fields, ChatOptions* options) {
  const nlohmann::json* format = fields.Object("response_format");
  if (format == nullptr) return;
  FieldReader reader = fields.Nested(*format, "response_format");
  const auto type = reader.String("type");
  if (!fields.ok()) return;
  if (!type) {
    reader.Fail(reader.Path("type"), "required (\"text\", \"json_object\" or \"json_schema\")");
    return;
  }
  if (*type == "text") return;
  if (*type == "json_object") {
    options->json_output = true;
  } else if (*type == "json_schema") {
    const nlohmann::json* spec = reader.Object("json_schema");
    if (!fields.ok()) return;
    if (spec == nullptr) {
      reader.Fail(reader.Path("json_schema"), "required (an object with a `schema`)");
      return;
    }
    FieldReader json_schema = reader.Nested(*spec, "response_format.json_schema");
    json_schema.String("name");
    json_schema.Bool("strict");
    if (const nlohmann::json* schema = json_schema.Get("schema")) {
      if (!schema->is_object() && !schema->is_boolean()) {
        json_schema.Fail(json_schema.Path("schema"),
                         std::string("expected a JSON schema object, got ") + JsonTypeName(*schema));
      } else {
        options->json_schema = *schema;
      }
    }
    if (!fields.ok()) return;
    options->json_output = true;
  } else {
    reader.Fail(reader.Path("type"),
                fmt::format("expected \"text\", \"json_object\" or \"json_schema\", got \"{}\"", *type));
    return;
  }
  if (options->tool_call_required) {
    fields.Fail(
        "response_format",
        "a JSON response_format cannot be combined with tool_choice \"required\" or a named function");
    return;
  }
  options->render.response_format = *format;
}

}  // namespace

void ReadThinkingOptions(FieldReader& fields, chat::RenderOptions* render) {
  if (const nlohmann::json* thinking = fields.Get("thinking")) {
    if (thinking->is_boolean()) {
      render->thinking = thinking->get<bool>();
    } else if (thinking->is_object()) {
      FieldReader reader = fields.Nested(*thinking, "thinking");
      const auto type = reader.String("type");
      if (type && *type != "enabled" && *type != "disabled")
        reader.Fail(reader.Path("type"),
                    fmt::format("expected \"enabled\" or \"disabled\", got \"{}\"", *type));
      if (type) render->thinking = *type == "enabled";
    } else {
      fields.Fail("thinking", std::string("expected a boolean or an object, got ") + JsonTypeName(*thinking));
    }
  }
  ReadEffort(fields, "reasoning_effort", render);
  if (const nlohmann::json* kwargs = fields.Object("chat_template_kwargs")) {
    FieldReader reader = fields.Nested(*kwargs, "chat_template_kwargs");
    if (const auto enable = reader.Bool("enable_thinking")) render->thinking = *enable;
    if (const auto thinking = reader.Bool("thinking")) render->thinking = *thinking;
    ReadEffort(reader, "thinking_effort", render);
  }
}

void ReadPromptEnd(FieldReader& fields, chat::RenderOptions* render) {
  render->add_generation_prompt = fields.Bool("add_generation_prompt").value_or(true);
  render->continue_final_message = fields.Bool("continue_final_message").value_or(false);
  if (fields.ok() && render->add_generation_prompt && render->continue_final_message) {
    fields.Fail("continue_final_message",
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  }
}

void MatchOpenChannel(chat::OpenChannel channel, ChatOptions* options) {
  if (channel != chat::OpenChannel::kResponse) return;
  options->parser.thinking = false;
  options->render.thinking = false;  // the constraint (MakeChatConstraint) then allows no reasoning
}

ChatOptions ReadChatOptions(FieldReader& fields, const ServerContext& ctx) {
  ChatOptions options;
  ReadThinkingOptions(fields, &options.render);
  ReadPromptEnd(fields, &options.render);
  if (const auto include = fields.Bool("include_reasoning")) options.include_reasoning = *include;
  ReadTools(fields, ctx, &options);
  ReadResponseFormat(fields, &options);
  if (std::optional<GuidedOutput> guided = ReadVllmGuidedFields(fields, /*chat=*/true)) {
    if (options.json_output) {
      fields.Fail(guided->field, "give one output format: response_format asks for JSON too");
    } else if (options.tool_call_required) {
      fields.Fail(guided->field, "cannot be combined with tool_choice \"required\" or a named function");
    } else if (guided->kind == GuidedOutput::Kind::kJson) {
      options.json_output = true;
      options.json_schema = std::move(guided->schema);
      options.json_schema_field = std::move(guided->field);
    } else {
      if (guided->kind == GuidedOutput::Kind::kRegex) options.guided_regex = std::move(guided->regex);
      if (guided->kind == GuidedOutput::Kind::kChoice) options.guided_choice = std::move(guided->choices);
      options.guided_field = std::move(guided->field);
    }
  }
  options.parser.thinking = options.render.thinking;
  return options;
}

}  // namespace k3::api
