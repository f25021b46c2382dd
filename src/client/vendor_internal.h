// Shared by the vendor_*.cc files: the state of one vendor-suite run (every finish_reason seen, the render
// route's presence) and the reference prompt-token counts. Not part of the library's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/chat/xtml_renderer.h"
#include "src/client/vendor_corpus.h"
#include "src/client/vendor_verify.h"
#include "src/client/verify_internal.h"

namespace k3::client::vendor_internal {

using verify_internal::ChatAnswer;
using verify_internal::StreamCapture;

// One finish_reason the endpoint gave, and the request it answered ("tool-args-get_weather (stream)").
struct SeenFinish {
  std::string request;
  std::string finish_reason;
};

// A prompt's expected token count and where it came from.
struct PromptCount {
  int64_t tokens = 0;
  std::string how;  // "k3's tokenizer and renderer" | "the endpoint's render route"
};

struct VendorRun {
  const VendorOptions& options;
  verify_internal::Run run;
  std::vector<SeenFinish> finishes;
  std::optional<bool> render_route;  // unknown until first asked

  explicit VendorRun(const VendorOptions& o) : options(o), run(o.verify) {}

  // A non-streamed chat; its finish_reason is recorded under `label`.
  ChatAnswer Ask(const std::string& label, const nlohmann::json& request);
  // A streamed chat (stream_options.include_usage true); its finish_reason is recorded under `label`.
  StreamCapture Stream(const std::string& label, const nlohmann::json& request);

  // The endpoint's prompt token ids of a chat request from POST /v1/chat/completions/render; NotFound
  // when the endpoint has no such route (remembered: it is asked once).
  Result<std::vector<int64_t>> RenderIds(const nlohmann::json& request);
  // The prompt tokens the request should have: k3's tokenizer + renderer when options.tokenizer is set
  // (`images` measured by the caller), else the render route's id count; NotFound when neither exists.
  Result<PromptCount> ExpectedPromptTokens(const nlohmann::json& request,
                                           const std::vector<chat::ImagePart>& images = {});
  // The same from k3's renderer only (NotFound without a tokenizer): the rendered ids.
  Result<std::vector<int64_t>> LocalIds(const nlohmann::json& request,
                                        const std::vector<chat::ImagePart>& images = {});
};

// Checks a tool call's arguments text against its function's schema with k3's validator: ok, or the
// reason ("not JSON: ...", "required: / ...").
Status ValidateToolArguments(const std::string& arguments, const nlohmann::json& schema);
// The parameters schema of the function `name` among `tools`; null when none is declared by that name.
const nlohmann::json* FindToolSchema(const nlohmann::json& tools, const std::string& name);

// "finish_reason=length, content '...'" for details.
std::string DescribeAnswer(const ChatResult& result);

CheckResult CheckToolArgs(VendorRun& vr, const ToolSchemaCase& tool_case);
CheckResult CheckToolChoiceRequired(VendorRun& vr);
CheckResult CheckToolChoiceNamed(VendorRun& vr);
CheckResult CheckToolChoiceNone(VendorRun& vr);
CheckResult CheckDynamicTools(VendorRun& vr);
CheckResult CheckResponseFormat(VendorRun& vr);
CheckResult CheckThinkingEffort(VendorRun& vr);
CheckResult CheckPromptTokensText(VendorRun& vr);
CheckResult CheckPromptTokensImage(VendorRun& vr);
CheckResult CheckSpecialTokenText(VendorRun& vr);
CheckResult CheckUsageChunk(VendorRun& vr);
CheckResult CheckFinishReasons(VendorRun& vr);

}  // namespace k3::client::vendor_internal
