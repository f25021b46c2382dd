// Fixtures of the api tests.
#include "src/api/api_test_util.h"

#include "src/tokenizer/bpe_trainer.h"

namespace k3::api::testing {

const tokenizer::Tokenizer& ByteTokenizer() {
  static const tokenizer::Tokenizer tokenizer =
      *tokenizer::Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe("", 256));
  return tokenizer;
}

ServerContext TestContext() {
  ServerContext ctx;
  ctx.tokenizer = &ByteTokenizer();
  ctx.served_model_name = "Kimi-K3";
  ctx.max_model_len = 4096;
  ctx.max_n = 16;
  ctx.max_messages = 64;
  ctx.eos_token_ids = {kEndOfMsg};
  ctx.created = 1700000000;
  return ctx;
}

engine::Event Ev(int32_t choice, std::string text, engine::FinishReason finish, bool request_done) {
  engine::Event event;
  event.choice = choice;
  event.text = std::move(text);
  event.finish = finish;
  event.request_done = request_done;
  return event;
}

std::vector<nlohmann::json> ParseAll(const std::vector<std::string>& payloads) {
  std::vector<nlohmann::json> out;
  for (const std::string& payload : payloads) out.push_back(nlohmann::json::parse(payload));
  return out;
}

}  // namespace k3::api::testing
