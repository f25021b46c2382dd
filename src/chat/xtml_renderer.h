// XTML chat rendering (spec §4.2): OpenAI-style messages + tools + options -> K3 prompt token ids.
//
// The prompt is built as a sequence of structural markers (<|open|>, <|close|>, <|sep|>, <|end_of_msg|>,
// always special ids) and ordinary text (tag names, attributes, bodies). Each run of ordinary text
// between two markers is encoded in one piece with specials disallowed, so a user typing `<|open|>`
// gets ordinary bytes, and the ids equal those of encoding the whole prompt with only the structural
// markers as specials. No BOS is added.
//
// Input shapes (nlohmann::json, as in an OpenAI chat request):
//   messages: [{role, content (string | [{type:"text", text} | image part] | null), name?, reasoning_content?
//   /
//              reasoning?, tool_calls? [{id, function:{name, arguments (JSON string or object)}}],
//              tool_call_id?, tool? , tools? (system messages: dynamic tool declarations)}]
//   tools: the request's tools array (rendered as given, keys sorted).
// Image parts ({type: "image_url" | "input_image" | "image"}) of user, system and tool messages stand where
// they are in the content as the image prompt of vision.md §4: <|media_begin|> + the text "image {W}x{H}"
// (the original upload size) + <|media_content|> + N x <|media_pad|> + <|media_end|>. The caller has
// decoded and measured each image (RenderOptions::images, by message and part index); the renderer records
// where each image's pads landed (RenderedPrompt::images). An image part without an entry is an error.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat {

// One image part of the messages, as measured by the image processor (src/image).
struct ImagePart {
  size_t message = 0;  // index in the messages array
  size_t part = 0;     // index in that message's content array
  int64_t width = 0;   // the upload's size, as written in the prompt
  int64_t height = 0;
  int64_t num_tokens = 0;  // <|media_pad|> tokens (the tower's output rows), >= 1
};

// Where an image's pads are in the rendered prompt.
struct RenderedImage {
  size_t message = 0;
  size_t part = 0;
  int64_t first_pad = 0;  // prompt position of its first <|media_pad|>
  int64_t num_pads = 0;
};

struct RenderOptions {
  bool thinking = true;                 // K3 is always-thinking unless a request turns it off
  std::string thinking_effort = "max";  // low | medium | high | max; anything else: no effort message
  nlohmann::json tools;                 // null or an array
  std::string tool_choice;              // "" / "auto" (nothing rendered), "required", "none"
  nlohmann::json response_format;       // null, {"type":"text"}, {"type":"json_object"},
                                        // {"type":"json_schema","json_schema":{"schema":{...}}}
  bool add_generation_prompt = true;
  // vLLM's continue_final_message: the final message (an assistant message without tool_calls) is left
  // open, so generation continues its text. Its think channel is closed after its reasoning and its
  // response channel left open after its content; when its content is empty and its reasoning is not, the
  // think channel itself is left open (the model continues thinking). The internal tool-choice and
  // response-format system messages come before it. Cannot be combined with add_generation_prompt.
  bool continue_final_message = false;
  std::vector<ImagePart> images;  // every image part of the messages
};

// Which channel the prompt leaves open for the model (how its output must be parsed).
enum class OpenChannel {
  kNone,      // the prompt ends after a whole message (add_generation_prompt false)
  kThink,     // generation starts in the think channel (the usual generation prompt, thinking on)
  kResponse,  // generation starts in the response channel (thinking off, or a continued response)
};

struct RenderedPrompt {
  std::vector<tokenizer::TokenId> ids;
  std::string text;                   // the same prompt as text, special markers written by name
  std::vector<RenderedImage> images;  // in prompt order
  OpenChannel open_channel = OpenChannel::kNone;
};

Result<RenderedPrompt> RenderXtml(const tokenizer::Tokenizer& tokenizer, const nlohmann::json& messages,
                                  const RenderOptions& options);

// The bodies of the internal system messages (exposed for tests and the structured-output grammar).
std::string ThinkingEffortBody(const std::string& effort);
std::string ToolDeclarationBody(const nlohmann::json& tools);
std::string DynamicToolDeclarationBody(const nlohmann::json& tools);

}  // namespace k3::chat
