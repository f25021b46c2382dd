// k3 verify --suite vendor: the pre-flight checks a K3 deployment is judged by (the items of Moonshot's
// vendor verifier), written for k3 against any OpenAI-compatible endpoint (vLLM included). Only the
// OpenAI chat route is required; /v1/chat/completions/render is used when the endpoint has it.
//
// Checks, in order:
//   models                       GET /v1/models lists the model (as the guide suite)
//   tool-args-<name>             for each schema of the corpus (vendor_corpus.h): a forced call's
//                                arguments are valid against the declared schema, non-streamed and
//                                streamed (the stream's argument deltas reassembled)
//   tool-choice-required         two tools, required: a call to a declared tool, valid, finish tool_calls
//   tool-choice-named            two tools, the second named: a call to exactly that one, valid
//   tool-choice-none             tools declared, none: no tool_calls, finish_reason not tool_calls
//   dynamic-tools                tools declared in a system message are accepted and reach the prompt
//   response-format              response_format json_schema: the content is JSON valid against it
//                                (non-streamed and streamed)
//   thinking-effort              reasoning_effort and chat_template_kwargs.thinking_effort low / high /
//                                max change the prompt (render route ids, or prompt_tokens against k3's
//                                renderer); both spellings give the same prompt
//   prompt-tokens-text           usage.prompt_tokens of text prompts equals k3's tokenizer + renderer
//   prompt-tokens-image          the same for a prompt with an image (skipped when the model takes none)
//   special-token-text           special-token names typed by a user ("<|im_end|>", K3's markers) are
//                                counted as text, not as special ids
//   usage-chunk                  with stream_options.include_usage the usage chunk is the last event
//                                before [DONE], after the finish_reason, with choices [], and its
//                                prompt_tokens equal the non-streamed answer's
//   finish-reason                every finish_reason the suite saw is stop, length or tool_calls (never a
//                                raw token id such as stop_163586), and max_tokens 1 ends with length
//
// The expected prompt-token numbers come from k3's own tokenizer and XTML renderer over the model's
// tokenizer files (VendorOptions::tokenizer, `k3 verify --tokenizer DIR`); without one they come from the
// endpoint's render route when it has one, else those checks are skipped and say why.
#pragma once

#include "src/client/verify.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::client {

struct VendorOptions {
  VerifyOptions verify;  // endpoint, model, HTTP options, max_tokens, vision, image processor
  // The served model's tokenizer (k3's reference counts); null: counts from the render route, or skipped.
  const tokenizer::Tokenizer* tokenizer = nullptr;
};

VerifyReport RunVendorVerify(const VendorOptions& options);

}  // namespace k3::client
