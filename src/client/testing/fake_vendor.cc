// FakeVendor: request routing, k3's prompt count, schema-satisfying answers and the SSE stream.
#include "src/client/testing/fake_vendor.h"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/chat/render_request.h"
#include "src/chat/schema_validator.h"
#include "src/chat/xtml_renderer.h"
#include "src/image/config.h"
#include "src/image/data_url.h"
#include "src/image/decode.h"
#include "src/image/geometry.h"

namespace k3::client::testing {
namespace {

using nlohmann::json;

std::string ErrorJson(const std::string& message, const std::string& type) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}}
      .dump();
}

// A value that satisfies `schema` (the corpus's keywords): candidates by type, the first that validates.
json ValueFor(const json& schema) {
  if (!schema.is_object()) return "x";
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) return (*e)[0];
  if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array() && !any->empty())
    return ValueFor((*any)[0]);
  const std::string type = schema.value("type", "string");
  std::vector<json> candidates;
  if (type == "integer" || type == "number") {
    const double low = schema.value("minimum", 0.0), high = schema.value("maximum", 1e9);
    const double v = std::clamp(type == "integer" ? 3.0 : 21.5, low, high);
    candidates.push_back(type == "integer" ? json(static_cast<int64_t>(v)) : json(v));
  } else if (type == "boolean") {
    candidates.push_back(true);
  } else if (type == "null") {
    candidates.push_back(nullptr);
  } else if (type == "array") {
    json items = json::array();
    for (int64_t i = 0; i < schema.value("minItems", int64_t{0}); ++i)
      items.push_back(ValueFor(schema.value("items", json())));
    candidates.push_back(items);
  } else if (type == "object") {
    json out = json::object();
    for (const json& name : schema.value("required", json::array())) {
      out[name.get<std::string>()] =
          ValueFor(schema.value("properties", json::object()).value(name.get<std::string>(), json()));
    }
    candidates.push_back(out);
  } else {
    candidates = {"Paris", "2026-03-02", "x"};
  }
  for (const json& c : candidates) {
    if (!chat::FindSchemaViolation(schema, c)) return c;
  }
  return candidates.front();
}

}  // namespace

FakeVendor::FakeVendor(FakeVendorOptions options) : options_(std::move(options)) {
  server_ = std::make_unique<LoopbackServer>(
      [this](const TestRequest& request, TestConnection& conn) { Handle(request, conn); });
}

void FakeVendor::Handle(const TestRequest& request, TestConnection& conn) {
  auto bad = [&](const std::string& message) {
    conn.Write(HttpResponseText(400, "application/json", ErrorJson(message, "BadRequestError")));
  };
  if (request.method == "GET" && request.path == "/v1/models") {
    const json body = {{"object", "list"}, {"data", {{{"id", options_.model}, {"object", "model"}}}}};
    conn.Write(HttpResponseText(200, "application/json", body.dump()));
    return;
  }
  const bool render = request.path == "/v1/chat/completions/render" && options_.render_route;
  if (request.method != "POST" || (request.path != "/v1/chat/completions" && !render)) {
    conn.Write(
        HttpResponseText(404, "application/json", ErrorJson("no route " + request.path, "NotFoundError")));
    return;
  }
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array()) return bad("messages");
  // The prompt as k3 renders it (a named tool_choice renders as required; images measured here).
  json for_render = body;
  if (for_render.contains("tool_choice") && for_render["tool_choice"].is_object())
    for_render["tool_choice"] = "required";
  if (options_.ignore_effort) {
    for_render.erase("reasoning_effort");
    if (for_render.contains("chat_template_kwargs"))
      for_render["chat_template_kwargs"].erase("thinking_effort");
  }
  auto parsed = chat::ParseRenderRequest(for_render.dump());
  if (!parsed.ok()) return bad(parsed.status().message());
  int64_t specials_delta = 0;
  const json& messages = body["messages"];
  for (size_t m = 0; m < messages.size(); ++m) {
    const json& content = messages[m].value("content", json());
    if (content.is_string() && options_.specials_as_ids && messages[m].value("role", "") == "user") {
      const std::string text = content.get<std::string>();
      specials_delta +=
          static_cast<int64_t>(options_.tokenizer->Encode(text, tokenizer::SpecialTokens::kAllowed).size()) -
          static_cast<int64_t>(
              options_.tokenizer->Encode(text, tokenizer::SpecialTokens::kDisallowed).size());
    }
    if (!content.is_array()) continue;
    for (size_t p = 0; p < content.size(); ++p) {
      if (!content[p].is_object() || content[p].value("type", "") != "image_url") continue;
      if (!options_.vision) return bad("model '" + options_.model + "' has no vision tower: image input");
      const json url = content[p]["image_url"].value("url", json());
      auto data = image::ParseDataUrl(url.is_string() ? url.get<std::string>() : "");
      if (!data.ok()) return bad(data.status().message());
      const auto* bytes = reinterpret_cast<const uint8_t*>(data->bytes.data());
      auto decoded = image::DecodeImage({bytes, data->bytes.size()}, image::DefaultDecodeLimits());
      if (!decoded.ok()) return bad(decoded.status().message());
      const auto g = image::PlanGeometry({decoded->width, decoded->height}, image::K3ProcessorConfig());
      parsed->options.images.push_back({m, p, decoded->width, decoded->height, g.num_tokens});
    }
  }
  auto prompt = chat::RenderXtml(*options_.tokenizer, parsed->messages, parsed->options);
  if (!prompt.ok()) return bad(prompt.status().message());
  if (render) {
    const json answer = {{"prompt", prompt->text}, {"token_ids", prompt->ids}, {"model", options_.model}};
    conn.Write(HttpResponseText(200, "application/json", answer.dump()));
    return;
  }
  const int64_t prompt_tokens =
      static_cast<int64_t>(prompt->ids.size()) + options_.prompt_token_error + specials_delta;

  // The answer: a forced tool call, schema JSON content, or words.
  const int64_t max_tokens = body.value("max_tokens", int64_t{1} << 30);
  const json tool_choice = body.value("tool_choice", json("auto"));
  const bool forced = body.contains("tools") && (tool_choice == json("required") || tool_choice.is_object());
  std::string tool_name, tool_args, content;
  int64_t completion_tokens = 0;
  std::string finish;
  if (forced) {
    const json* function = &body["tools"][0]["function"];
    if (tool_choice.is_object()) {
      for (const json& tool : body["tools"]) {
        if (tool["function"].value("name", "") == tool_choice["function"].value("name", ""))
          function = &tool["function"];
      }
    }
    tool_name = function->value("name", "");
    tool_args = options_.valid_tool_arguments ? ValueFor(function->value("parameters", json::object())).dump()
                                              : std::string(R"({"unexpected": 1})");
    completion_tokens = 10;
    finish = "tool_calls";
  } else if (body.contains("response_format") && body["response_format"].value("type", "") == "json_schema") {
    content = ValueFor(body["response_format"]["json_schema"]["schema"]).dump();
    completion_tokens = 10;
    finish = "stop";
  } else {
    completion_tokens = std::min<int64_t>(options_.output_tokens, max_tokens);
    for (int64_t i = 0; i < completion_tokens; ++i) content += " word" + std::to_string(i);
    finish = completion_tokens < max_tokens ? "stop" : "length";
  }
  if (finish == "stop" && !options_.finish_reason_leak.empty()) finish = options_.finish_reason_leak;
  const json usage = {{"prompt_tokens", prompt_tokens},
                      {"completion_tokens", completion_tokens},
                      {"total_tokens", prompt_tokens + completion_tokens}};
  json calls = json::array();
  if (forced) {
    calls.push_back({{"id", "call_0"},
                     {"type", "function"},
                     {"function", {{"name", tool_name}, {"arguments", tool_args}}}});
  }
  if (!body.value("stream", false)) {
    json message = {{"role", "assistant"}, {"content", forced ? json(nullptr) : json(content)}};
    if (forced) message["tool_calls"] = calls;
    const json answer = {{"id", "chatcmpl-1"},
                         {"object", "chat.completion"},
                         {"model", options_.model},
                         {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
                         {"usage", usage}};
    conn.Write(HttpResponseText(200, "application/json", answer.dump()));
    return;
  }
  const bool include_usage =
      body.contains("stream_options") && body["stream_options"].value("include_usage", false);
  auto chunk = [&](json choices, json extra_usage) {
    json c = {{"id", "chatcmpl-1"},
              {"object", "chat.completion.chunk"},
              {"model", options_.model},
              {"choices", choices}};
    if (!extra_usage.is_null()) c["usage"] = extra_usage;
    WriteChunk(conn, "data: " + c.dump() + "\n\n");
  };
  auto delta = [&](json d, json reason) {
    chunk({{{"index", 0}, {"delta", std::move(d)}, {"finish_reason", std::move(reason)}}}, nullptr);
  };
  WriteSseHead(conn);
  delta({{"role", "assistant"}, {"content", ""}}, nullptr);
  if (forced) {
    delta({{"tool_calls",
            {{{"index", 0},
              {"id", "call_0"},
              {"type", "function"},
              {"function", {{"name", tool_name}, {"arguments", ""}}}}}}},
          nullptr);
    const size_t half = tool_args.size() / 2;
    for (const std::string& piece : {tool_args.substr(0, half), tool_args.substr(half)}) {
      delta({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", piece}}}}}}}, nullptr);
    }
  } else {
    const size_t half = content.size() / 2;
    for (const std::string& piece : {content.substr(0, half), content.substr(half)})
      delta({{"content", piece}}, nullptr);
  }
  if (include_usage && options_.usage_before_finish) chunk(json::array(), usage);
  delta(json::object(), finish);
  if (include_usage && !options_.usage_before_finish) chunk(json::array(), usage);
  WriteChunk(conn, "data: [DONE]\n\n");
  WriteLastChunk(conn);
}

}  // namespace k3::client::testing
