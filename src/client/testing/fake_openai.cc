// FakeOpenAi: request routing and the canned OpenAI answers.
#include "src/client/testing/fake_openai.h"

#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/image/config.h"
#include "src/image/data_url.h"
#include "src/image/decode.h"
#include "src/image/geometry.h"

namespace k3::client::testing {
namespace {

using nlohmann::json;

void Sleep(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string ErrorJson(const std::string& message, const std::string& type, const std::string& param) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", param}, {"code", nullptr}}}}.dump();
}

int64_t CountWords(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  int64_t n = 0;
  while (in >> word) ++n;
  return n;
}

// A value that satisfies a (simple) JSON schema.
json ValueFor(const json& schema) {
  if (!schema.is_object()) return "x";
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) return (*e)[0];
  const std::string type = schema.value("type", "string");
  if (type == "integer") return 1;
  if (type == "number") return 1.5;
  if (type == "boolean") return true;
  if (type == "array") return json::array();
  if (type == "object") {
    json out = json::object();
    for (const json& name : schema.value("required", json::array())) {
      out[name.get<std::string>()] = ValueFor(schema["properties"].value(name.get<std::string>(), json()));
    }
    return out;
  }
  return "Paris";
}

}  // namespace

FakeOpenAi::FakeOpenAi(FakeOpenAiOptions options) : options_(std::move(options)) {
  server_ = std::make_unique<LoopbackServer>(
      [this](const TestRequest& request, TestConnection& conn) { Handle(request, conn); });
}

int64_t FakeOpenAi::prompt_tokens_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prompt_tokens_;
}

int64_t FakeOpenAi::generation_tokens_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_tokens_;
}

void FakeOpenAi::Handle(const TestRequest& request, TestConnection& conn) {
  if (!options_.api_key.empty() && request.path.rfind("/v1/", 0) == 0) {
    auto it = request.headers.find("authorization");
    if (it == request.headers.end() || it->second != "Bearer " + options_.api_key) {
      conn.Write(HttpResponseText(401, "application/json",
                                  ErrorJson("invalid API key", "authentication_error", "")));
      return;
    }
  }
  if (request.method == "GET" && request.path == "/v1/models") {
    const json body = {
        {"object", "list"},
        {"data", {{{"id", options_.model}, {"object", "model"}, {"created", 0}, {"owned_by", "fake"}}}}};
    conn.Write(HttpResponseText(200, "application/json", body.dump()));
  } else if (request.method == "GET" && request.path == "/health") {
    conn.Write(HttpResponseText(options_.health ? 200 : 503, "text/plain", ""));
  } else if (request.method == "GET" && request.path == "/metrics" && options_.metrics) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string text;
    text += "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n";
    text += "# TYPE vllm:prompt_tokens_total counter\n";
    text += "vllm:prompt_tokens_total{model_name=\"" + options_.model + "\"} " +
            std::to_string(prompt_tokens_) + "\n";
    text += "vllm:generation_tokens_total{model_name=\"" + options_.model + "\"} " +
            std::to_string(generation_tokens_) + "\n";
    text += "vllm:prefix_cache_queries_total{model_name=\"" + options_.model + "\"} " +
            std::to_string(cache_queries_) + "\n";
    text += "vllm:prefix_cache_hits_total{model_name=\"" + options_.model + "\"} " +
            std::to_string(cache_hits_) + "\n";
    text += "vllm:request_success_total{finished_reason=\"length\",model_name=\"" + options_.model + "\"} " +
            std::to_string(requests_total_) + ".0\n";
    conn.Write(HttpResponseText(200, "text/plain; version=0.0.4", text));
  } else if (request.method == "POST" && request.path == "/v1/chat/completions") {
    HandleChat(request, conn);
  } else if (request.method == "POST" && request.path == "/tokenize" && options_.tokenize) {
    const json body = json::parse(request.body, nullptr, false);
    const int64_t n = body.is_object() && body.contains("prompt") && body["prompt"].is_string()
                          ? CountWords(body["prompt"].get<std::string>())
                          : 0;
    json tokens = json::array();
    for (int64_t i = 0; i < n; ++i) tokens.push_back(1000 + i);
    conn.Write(HttpResponseText(200, "application/json", json{{"count", n}, {"tokens", tokens}}.dump()));
  } else {
    conn.Write(HttpResponseText(404, "application/json",
                                ErrorJson("no route " + request.path, "not_found_error", "")));
  }
}

void FakeOpenAi::HandleChat(const TestRequest& request, TestConnection& conn) {
  const json body = json::parse(request.body, nullptr, false);
  auto bad = [&](const std::string& message, const std::string& param) {
    if (options_.openai_errors) {
      conn.Write(
          HttpResponseText(400, "application/json", ErrorJson(message, "invalid_request_error", param)));
    } else {
      conn.Write(HttpResponseText(400, "text/plain", "Bad Request"));
    }
  };
  if (body.is_discarded() || !body.is_object()) return bad("body is not a JSON object", "");
  if (!body.contains("messages") || !body["messages"].is_array())
    return bad("messages: expected an array", "messages");
  if (body.value("model", "") != options_.model) {
    conn.Write(HttpResponseText(
        404, "application/json",
        ErrorJson("model '" + body.value("model", "") + "' does not exist", "not_found_error", "model")));
    return;
  }
  std::string prompt;
  int64_t image_tokens = 0;
  std::string image_key;  // the images' sizes, part of the prefix-cache key
  for (const json& m : body["messages"]) {
    if (!m.is_object() || !m.contains("content")) continue;
    if (m["content"].is_string()) prompt += m["content"].get<std::string>() + "\n";
    if (!m["content"].is_array()) continue;
    for (const json& part : m["content"]) {
      if (!part.is_object()) continue;
      if (part.value("type", "") == "text" && part.contains("text") && part["text"].is_string()) {
        prompt += part["text"].get<std::string>() + "\n";
        continue;
      }
      if (part.value("type", "") != "image_url") continue;
      if (!options_.vision) return bad("model '" + options_.model + "' has no vision tower: image input", "");
      if (!options_.image_refusal.empty()) return bad(options_.image_refusal, "");
      const json url = part.contains("image_url") && part["image_url"].is_object()
                           ? part["image_url"].value("url", json())
                           : json();
      auto data = image::ParseDataUrl(url.is_string() ? url.get<std::string>() : "");
      if (!data.ok()) return bad(data.status().message(), "");
      const auto* bytes = reinterpret_cast<const uint8_t*>(data->bytes.data());
      auto decoded = image::DecodeImage({bytes, data->bytes.size()}, image::DefaultDecodeLimits());
      if (!decoded.ok()) return bad(decoded.status().message(), "");
      const auto g = image::PlanGeometry({decoded->width, decoded->height}, image::K3ProcessorConfig());
      image_tokens += 3 + g.num_tokens + 2 + options_.image_token_error;
      image_key += std::to_string(decoded->width) + "x" + std::to_string(decoded->height) + ";";
    }
  }
  const int64_t prompt_tokens = CountWords(prompt) + image_tokens;
  prompt += image_key;
  int64_t max_tokens = body.value("max_tokens", body.value("max_completion_tokens", int64_t{1} << 30));
  const int64_t n = std::min<int64_t>(options_.output_tokens, max_tokens);
  const bool stream = body.value("stream", false);
  const bool include_usage = stream && body.contains("stream_options") &&
                             body["stream_options"].is_object() &&
                             body["stream_options"].value("include_usage", false);
  const bool has_tools = body.contains("tools") && body["tools"].is_array() && !body["tools"].empty();
  const json tool_choice = body.value("tool_choice", json("auto"));
  if (has_tools && tool_choice == json("auto") && !options_.auto_tool_choice) {
    return bad("\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
               "");
  }
  const bool tools = has_tools && tool_choice != json("none") && options_.tool_calls;
  int64_t cached = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (options_.prefix_cache && seen_prompts_.count(prompt) != 0) cached = prompt_tokens - 1;
    seen_prompts_.insert(prompt);
    prompt_tokens_ += prompt_tokens;
    generation_tokens_ += n;
    cache_queries_ += prompt_tokens;
    cache_hits_ += cached;
    ++requests_total_;
  }
  std::vector<std::string> words;
  for (int64_t i = 0; i < n; ++i) words.push_back(" tok" + std::to_string(i));
  if (has_tools && !options_.tool_calls && options_.call_in_content) {
    words = {"<tool_call>", "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
             "</tool_call>"};
  }
  if (stream && !options_.stream_matches && !words.empty()) words[0] = " different";
  const std::string reasoning = options_.reasoning_field.empty() ? "" : "Thinking about it.";
  std::string tool_name, tool_args;
  if (tools) {
    const json& function = body["tools"][0].value("function", json::object());
    tool_name = function.value("name", "tool");
    tool_args = options_.valid_tool_arguments ? ValueFor(function.value("parameters", json::object())).dump()
                                              : std::string(R"({"unexpected": 1})");
  }
  json usage = {
      {"prompt_tokens", prompt_tokens}, {"completion_tokens", n}, {"total_tokens", prompt_tokens + n}};
  if (options_.cached_tokens_in_usage) usage["prompt_tokens_details"] = {{"cached_tokens", cached}};
  const std::string finish = tools ? "tool_calls" : "length";

  if (!stream) {
    json message = {{"role", "assistant"}, {"content", nullptr}};
    if (!reasoning.empty()) message[options_.reasoning_field] = reasoning;
    if (tools) {
      message["tool_calls"] = {{{"id", "call_0"},
                                {"type", "function"},
                                {"function", {{"name", tool_name}, {"arguments", tool_args}}}}};
    } else {
      std::string text;
      for (const std::string& w : words) text += w;
      message["content"] = text;
    }
    const json answer = {{"id", "chatcmpl-1"},
                         {"object", "chat.completion"},
                         {"created", 0},
                         {"model", options_.model},
                         {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
                         {"usage", usage}};
    conn.Write(HttpResponseText(200, "application/json", answer.dump()));
    return;
  }
  const std::string separator = options_.sse_blank_lines ? "\n\n" : "\n";
  auto send = [&](json delta, json finish_reason) {
    const json chunk = {
        {"id", "chatcmpl-1"},
        {"object", "chat.completion.chunk"},
        {"created", 0},
        {"model", options_.model},
        {"choices", {{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish_reason}}}}};
    WriteChunk(conn, "data: " + chunk.dump() + separator);
  };
  WriteSseHead(conn);
  send({{"role", "assistant"}, {"content", ""}}, nullptr);
  Sleep(options_.first_token_delay_s);
  bool first = true;
  auto pace = [&] {
    if (!first) Sleep(options_.token_interval_s);
    first = false;
  };
  if (!reasoning.empty()) {
    pace();
    send({{options_.reasoning_field, reasoning}}, nullptr);
  }
  if (tools) {
    pace();
    send({{"tool_calls",
           {{{"index", 0},
             {"id", "call_0"},
             {"type", "function"},
             {"function", {{"name", tool_name}, {"arguments", ""}}}}}}},
         nullptr);
    const size_t half = tool_args.size() / 2;
    for (const std::string& piece : {tool_args.substr(0, half), tool_args.substr(half)}) {
      pace();
      send({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", piece}}}}}}}, nullptr);
    }
  } else {
    for (const std::string& w : words) {
      pace();
      send({{"content", w}}, nullptr);
    }
  }
  send(json::object(), finish);
  if (include_usage && options_.sse_usage) {
    const json chunk = {{"id", "chatcmpl-1"},      {"object", "chat.completion.chunk"}, {"created", 0},
                        {"model", options_.model}, {"choices", json::array()},          {"usage", usage}};
    WriteChunk(conn, "data: " + chunk.dump() + separator);
  }
  if (options_.sse_done) WriteChunk(conn, "data: [DONE]\n\n");
  WriteLastChunk(conn);
}

}  // namespace k3::client::testing
