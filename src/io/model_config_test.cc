// Tests for ParseModelConfig / ModelConfigToJson / the layer schedule, on the real Kimi K3 values
// (spec k3-model.md §1.2) and the real Kimi Linear values (§7), plus one test per kind of bad config.
#include "src/io/model_config.h"

#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/file.h"

namespace k3::io {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The published K3 config.json, text tower part (spec §1.1, §1.2, §3.3).
json K3Json() {
  std::vector<int> full, kda;
  for (int layer = 1; layer <= 93; ++layer) (layer % 4 == 0 || layer == 93 ? full : kda).push_back(layer);
  json text = {
      {"model_type", "kimi_linear"},
      {"hidden_size", 7168},
      {"num_hidden_layers", 93},
      {"vocab_size", 163840},
      {"rms_norm_eps", 1e-5},
      {"hidden_act", "situ"},
      {"activation_situ_beta", 4.0},
      {"activation_situ_linear_beta", 25.0},
      {"intermediate_size", 33792},
      {"first_k_dense_replace", 1},
      {"moe_layer_freq", 1},
      {"num_experts", 896},
      {"num_experts_per_token", 16},
      {"moe_intermediate_size", 3072},
      {"routed_expert_hidden_size", 3584},
      {"latent_moe_use_norm", true},
      {"num_shared_experts", 2},
      {"moe_router_activation_func", "sigmoid"},
      {"topk_method", "noaux_tc"},
      {"use_grouped_topk", true},
      {"num_expert_group", 1},
      {"topk_group", 1},
      {"moe_renormalize", true},
      {"routed_scaling_factor", 1.0},
      {"num_attention_heads", 96},
      {"num_key_value_heads", 96},
      {"q_lora_rank", 1536},
      {"kv_lora_rank", 512},
      {"qk_nope_head_dim", 128},
      {"qk_rope_head_dim", 64},
      {"v_head_dim", 128},
      {"mla_use_nope", true},
      {"mla_use_output_gate", true},
      {"linear_attn_config",
       {{"num_heads", 96},
        {"head_dim", 128},
        {"short_conv_kernel_size", 4},
        {"use_full_rank_gate", true},
        {"gate_lower_bound", -5.0},
        {"full_attn_layers", full},
        {"kda_layers", kda}}},
      {"attn_res_block_size", 12},
      {"max_position_embeddings", 1048576},
      {"num_nextn_predict_layers", 0},
      {"tie_word_embeddings", false},
      {"eos_token_id", 163586},
      {"rope_theta", 50000.0},
  };
  json quant = {
      {"quant_method", "compressed-tensors"},
      {"format", "mxfp4-pack-quantized"},
      {"config_groups",
       {{"group_0",
         {{"format", "mxfp4-pack-quantized"},
          {"targets", {"Linear"}},
          {"weights", {{"num_bits", 4}, {"group_size", 32}, {"type", "float"}, {"strategy", "group"}}},
          {"input_activations", nullptr}}}}},
      {"ignore", {"lm_head", "re:.*self_attn.*"}},
  };
  return json{
      {"architectures", {"KimiK3ForConditionalGeneration"}},
      {"model_type", "kimi_k3"},
      {"bos_token_id", 163584},
      {"eos_token_id", {163586}},
      {"pad_token_id", 163839},
      {"media_placeholder_token_id", 163605},
      {"tie_word_embeddings", false},
      {"text_config", text},
      {"vision_config", {{"vt_hidden_size", 1152}}},
      {"quantization_config", quant},
  };
}

// Kimi-Linear-48B-A3B config.json (spec §7).
json KimiLinearJson() {
  std::vector<int> full = {4, 8, 12, 16, 20, 24, 27}, kda;
  for (int layer = 1; layer <= 27; ++layer) {
    if (std::find(full.begin(), full.end(), layer) == full.end()) kda.push_back(layer);
  }
  return json{
      {"architectures", {"KimiLinearForCausalLM"}},
      {"model_type", "kimi_linear"},
      {"bos_token_id", 163584},
      {"eos_token_id", 163586},
      {"pad_token_id", 163839},
      {"hidden_size", 2304},
      {"num_hidden_layers", 27},
      {"vocab_size", 163840},
      {"rms_norm_eps", 1e-05},
      {"hidden_act", "silu"},
      {"head_dim", 72},
      {"intermediate_size", 9216},
      {"first_k_dense_replace", 1},
      {"moe_layer_freq", 1},
      {"num_experts", 256},
      {"num_experts_per_token", 8},
      {"moe_intermediate_size", 1024},
      {"num_shared_experts", 1},
      {"moe_renormalize", true},
      {"moe_router_activation_func", "sigmoid"},
      {"routed_scaling_factor", 2.446},
      {"num_attention_heads", 32},
      {"num_key_value_heads", 32},
      {"q_lora_rank", nullptr},
      {"kv_lora_rank", 512},
      {"qk_nope_head_dim", 128},
      {"qk_rope_head_dim", 64},
      {"v_head_dim", 128},
      {"mla_use_nope", true},
      {"linear_attn_config",
       {{"num_heads", 32},
        {"head_dim", 128},
        {"short_conv_kernel_size", 4},
        {"full_attn_layers", full},
        {"kda_layers", kda}}},
      {"tie_word_embeddings", false},
      {"rope_scaling", nullptr},
  };
}

Result<ModelConfig> Parse(const json& j) { return ParseModelConfig(j.dump(), "ckpt/config.json"); }

TEST(ModelConfigTest, ParsesRealKimiK3) {
  auto cfg = Parse(K3Json());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->family, ModelFamily::kKimiK3);
  EXPECT_EQ(cfg->model_type, "kimi_k3");
  EXPECT_EQ(cfg->tensor_prefix, "language_model.");
  EXPECT_EQ(cfg->hidden_size, 7168);
  EXPECT_EQ(cfg->num_layers, 93);
  EXPECT_EQ(cfg->vocab_size, 163840);
  EXPECT_FLOAT_EQ(cfg->rms_norm_eps, 1e-5f);
  EXPECT_EQ(cfg->activation, Activation::kSitu);
  EXPECT_EQ(cfg->situ_beta, 4.0f);
  EXPECT_EQ(cfg->situ_linear_beta, 25.0f);
  EXPECT_EQ(cfg->intermediate_size, 33792);
  EXPECT_EQ(cfg->num_experts, 896);
  EXPECT_EQ(cfg->num_experts_per_token, 16);
  EXPECT_EQ(cfg->moe_intermediate_size, 3072);
  EXPECT_EQ(cfg->routed_expert_hidden_size, 3584);
  EXPECT_EQ(cfg->expert_io_dim(), 3584);
  EXPECT_TRUE(cfg->latent_moe_use_norm);
  EXPECT_EQ(cfg->shared_expert_intermediate(), 6144);
  EXPECT_TRUE(cfg->moe_renormalize);
  EXPECT_EQ(cfg->routed_scaling_factor, 1.0f);
  EXPECT_TRUE(cfg->experts_mxfp4);
  EXPECT_EQ(cfg->mxfp4_group_size, 32);
  EXPECT_EQ(cfg->mla_num_heads, 96);
  EXPECT_EQ(cfg->q_lora_rank, 1536);
  EXPECT_EQ(cfg->kv_lora_rank, 512);
  EXPECT_EQ(cfg->mla_q_head_dim(), 192);
  EXPECT_EQ(cfg->v_head_dim, 128);
  EXPECT_TRUE(cfg->mla_use_output_gate);
  EXPECT_EQ(cfg->kda_proj_dim(), 12288);
  EXPECT_EQ(cfg->short_conv_kernel_size, 4);
  EXPECT_TRUE(cfg->kda_full_rank_gate);
  EXPECT_TRUE(cfg->kda_has_gate_lower_bound);
  EXPECT_EQ(cfg->kda_gate_lower_bound, -5.0f);
  EXPECT_EQ(cfg->attn_res_block_size, 12);
  EXPECT_TRUE(cfg->has_attn_res());
  EXPECT_EQ(cfg->max_position_embeddings, 1048576);
  EXPECT_EQ(cfg->bos_token_id, 163584);
  EXPECT_EQ(cfg->eos_token_id, 163586);
  EXPECT_EQ(cfg->pad_token_id, 163839);
  EXPECT_FALSE(cfg->tie_word_embeddings);
}

TEST(ModelConfigTest, KimiK3LayerSchedule) {
  auto cfg = Parse(K3Json());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  std::vector<int64_t> mla;
  for (int64_t layer = 0; layer < cfg->num_layers; ++layer) {
    if (cfg->LayerAttention(layer) == AttentionKind::kMla) mla.push_back(layer);
  }
  std::vector<int64_t> expected;
  for (int64_t layer = 3; layer <= 91; layer += 4) expected.push_back(layer);
  expected.push_back(92);
  EXPECT_EQ(mla, expected);
  EXPECT_EQ(cfg->num_mla_layers(), 24);
  EXPECT_EQ(cfg->num_kda_layers(), 69);
  EXPECT_EQ(cfg->LayerFfn(0), FfnKind::kDense);
  for (int64_t layer = 1; layer < 93; ++layer) EXPECT_EQ(cfg->LayerFfn(layer), FfnKind::kMoe) << layer;
}

TEST(ModelConfigTest, ParsesRealKimiLinear) {
  auto cfg = Parse(KimiLinearJson());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->family, ModelFamily::kKimiLinear);
  EXPECT_EQ(cfg->tensor_prefix, "");
  EXPECT_EQ(cfg->hidden_size, 2304);
  EXPECT_EQ(cfg->num_layers, 27);
  EXPECT_EQ(cfg->activation, Activation::kSilu);
  EXPECT_EQ(cfg->q_lora_rank, 0);
  EXPECT_FALSE(cfg->mla_use_output_gate);
  EXPECT_FALSE(cfg->kda_full_rank_gate);
  EXPECT_FALSE(cfg->kda_has_gate_lower_bound);
  EXPECT_EQ(cfg->kda_proj_dim(), 4096);
  EXPECT_EQ(cfg->routed_expert_hidden_size, 0);
  EXPECT_EQ(cfg->expert_io_dim(), 2304);
  EXPECT_EQ(cfg->num_experts, 256);
  EXPECT_EQ(cfg->num_experts_per_token, 8);
  EXPECT_EQ(cfg->num_shared_experts, 1);
  EXPECT_EQ(cfg->routed_scaling_factor, 2.446f);
  EXPECT_FALSE(cfg->experts_mxfp4);
  EXPECT_FALSE(cfg->has_attn_res());
  EXPECT_EQ(cfg->eos_token_id, 163586);
  EXPECT_EQ(cfg->num_mla_layers(), 7);
  EXPECT_EQ(cfg->num_kda_layers(), 20);
  EXPECT_EQ(cfg->LayerAttention(26), AttentionKind::kMla);
  EXPECT_EQ(cfg->LayerAttention(25), AttentionKind::kKda);
  EXPECT_EQ(cfg->LayerAttention(3), AttentionKind::kMla);
  EXPECT_EQ(cfg->LayerFfn(0), FfnKind::kDense);
  EXPECT_EQ(cfg->LayerFfn(1), FfnKind::kMoe);
}

TEST(ModelConfigTest, RoundTripsBothFamilies) {
  for (const json& original : {K3Json(), KimiLinearJson()}) {
    auto cfg = Parse(original);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    const json written = ModelConfigToJson(*cfg);
    EXPECT_EQ(written["model_type"], original["model_type"]);
    auto back = Parse(written);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << written.dump(2);
    EXPECT_TRUE(*back == *cfg) << written.dump(2);
  }
}

TEST(ModelConfigTest, WritesHfLayout) {
  auto cfg = Parse(K3Json());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const json j = ModelConfigToJson(*cfg);
  EXPECT_EQ(j["architectures"][0], "KimiK3ForConditionalGeneration");
  EXPECT_EQ(j["text_config"]["hidden_size"], 7168);
  EXPECT_EQ(j["text_config"]["linear_attn_config"]["kda_layers"].size(), 69u);
  EXPECT_EQ(j["quantization_config"]["quant_method"], "compressed-tensors");
  EXPECT_EQ(j["quantization_config"]["config_groups"]["group_0"]["format"], "mxfp4-pack-quantized");
  EXPECT_EQ(j["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"], 32);
  EXPECT_TRUE(j["quantization_config"]["ignore"].is_array());
  EXPECT_FALSE(j.contains("hidden_size"));

  auto linear = Parse(KimiLinearJson());
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  const json l = ModelConfigToJson(*linear);
  EXPECT_EQ(l["architectures"][0], "KimiLinearForCausalLM");
  EXPECT_EQ(l["hidden_size"], 2304);
  EXPECT_TRUE(l["q_lora_rank"].is_null());
  EXPECT_EQ(l["routed_scaling_factor"].dump(), "2.446");
  EXPECT_FALSE(l.contains("text_config"));
  EXPECT_FALSE(l.contains("quantization_config"));
}

TEST(ModelConfigTest, QuantizationInsideTextConfigOrOnlyInGroups) {
  json j = K3Json();
  j["text_config"]["quantization_config"] = j["quantization_config"];
  j.erase("quantization_config");
  j["text_config"]["quantization_config"].erase("format");
  auto cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->experts_mxfp4);

  j.erase("text_config");
  j = K3Json();
  j.erase("quantization_config");
  cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->experts_mxfp4);
}

TEST(ModelConfigTest, AcceptsAliases) {
  json j = KimiLinearJson();
  j.erase("num_experts");
  j.erase("num_experts_per_token");
  j.erase("num_shared_experts");
  j["n_routed_experts"] = 64;
  j["num_experts_per_tok"] = 6;
  j["n_shared_experts"] = 2;
  auto cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->num_experts, 64);
  EXPECT_EQ(cfg->num_experts_per_token, 6);
  EXPECT_EQ(cfg->num_shared_experts, 2);
}

TEST(ModelConfigTest, MoeLayerFrequencyAndNoExperts) {
  json j = KimiLinearJson();
  j["first_k_dense_replace"] = 2;
  j["moe_layer_freq"] = 3;
  auto cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  for (int64_t layer = 0; layer < 27; ++layer) {
    const bool moe = layer >= 2 && (layer - 2) % 3 == 0;
    EXPECT_EQ(cfg->LayerFfn(layer), moe ? FfnKind::kMoe : FfnKind::kDense) << layer;
  }
  j["num_experts"] = 0;
  cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  for (int64_t layer = 0; layer < 27; ++layer) EXPECT_EQ(cfg->LayerFfn(layer), FfnKind::kDense);
}

TEST(ModelConfigTest, LoadReadsConfigJsonFromDirectory) {
  const std::string dir = ::testing::TempDir() + "/k3_model_config_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomic(dir + "/config.json", KimiLinearJson().dump()).ok());
  auto cfg = LoadModelConfig(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->hidden_size, 2304);
  std::filesystem::remove_all(dir);

  auto missing = LoadModelConfig(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("config.json"));
}

TEST(ModelConfigTest, FuzzSeedConfigsParseAndRoundTrip) {
  const std::string dir = std::string(K3_SOURCE_DIR) + "/fuzz/corpus/fuzz_model_config";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto text = ReadFileToString(entry.path().string());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    auto cfg = ParseModelConfig(*text, entry.path().string());
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto back = Parse(ModelConfigToJson(*cfg));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == *cfg) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 3);
}

// --- Bad configs: each a clear Status naming the file, the field and the fix. ---

void ExpectError(const Result<ModelConfig>& cfg, StatusCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), code) << cfg.status().ToString();
  EXPECT_THAT(cfg.status().message(), HasSubstr("ckpt/config.json"));
  for (const std::string& part : parts) EXPECT_THAT(cfg.status().message(), HasSubstr(part));
}

TEST(ModelConfigErrorTest, InvalidJson) {
  ExpectError(ParseModelConfig("{\"model_type\": \"kimi_k3\",", "ckpt/config.json"),
              StatusCode::kInvalidArgument, {"not valid JSON"});
  ExpectError(ParseModelConfig("", "ckpt/config.json"), StatusCode::kInvalidArgument, {"not valid JSON"});
  ExpectError(ParseModelConfig("[1, 2]", "ckpt/config.json"), StatusCode::kInvalidArgument, {"JSON object"});
}

TEST(ModelConfigErrorTest, ModelType) {
  json j = K3Json();
  j.erase("model_type");
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'model_type'", "missing"});
  j["model_type"] = "llama";
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"llama", "kimi_k3"});
  j["model_type"] = 3;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'model_type'", "must be a string"});
  j = K3Json();
  j.erase("text_config");
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config'", "missing"});
  j["text_config"] = "x";
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config'", "must be an object"});
}

TEST(ModelConfigErrorTest, MissingRequiredField) {
  json j = K3Json();
  j["text_config"].erase("hidden_size");
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.hidden_size'", "missing", "fix: add it"});
  j = KimiLinearJson();
  j["num_hidden_layers"] = nullptr;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'num_hidden_layers'", "null"});
  j = K3Json();
  j["text_config"]["linear_attn_config"].erase("kda_layers");
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.linear_attn_config.kda_layers'", "missing"});
}

TEST(ModelConfigErrorTest, WrongJsonType) {
  json j = K3Json();
  j["text_config"]["hidden_size"] = "7168";
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.hidden_size'", "must be an integer", "found string \"7168\""});
  j = K3Json();
  j["text_config"]["vocab_size"] = 163840.5;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.vocab_size'", "found number"});
  j = K3Json();
  j["text_config"]["latent_moe_use_norm"] = 1;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.latent_moe_use_norm'", "true or false"});
  j = K3Json();
  j["text_config"]["rms_norm_eps"] = "1e-5";
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.rms_norm_eps'", "must be a number"});
  j = K3Json();
  j["text_config"]["linear_attn_config"] = {1, 2};
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.linear_attn_config'", "must be an object"});
  j = K3Json();
  j["text_config"]["linear_attn_config"]["full_attn_layers"] = "4,8";
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.linear_attn_config.full_attn_layers'", "list of integers"});
  j = K3Json();
  j["text_config"]["linear_attn_config"]["kda_layers"][5] = "6";
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.linear_attn_config.kda_layers[5]'"});
}

TEST(ModelConfigErrorTest, OutOfRangeValues) {
  json j = K3Json();
  j["text_config"]["hidden_size"] = 0;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.hidden_size'", "found 0"});
  j = K3Json();
  j["text_config"]["num_hidden_layers"] = -3;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.num_hidden_layers'", "found -3"});
  j = K3Json();
  j["text_config"]["vocab_size"] = 18446744073709551615ull;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.vocab_size'", "18446744073709551615"});
  j = K3Json();
  j["text_config"]["num_experts_per_token"] = 1000;
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.num_experts_per_token'", "num_experts=896"});
  j = K3Json();
  j["text_config"]["rms_norm_eps"] = -1.0;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.rms_norm_eps'", "positive"});
  j = K3Json();
  j["text_config"]["rms_norm_eps"] = 1e300;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'text_config.rms_norm_eps'", "float32"});
  j = K3Json();
  j["pad_token_id"] = 163840;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'pad_token_id'", "vocab_size=163840"});
  j = K3Json();
  j["eos_token_id"] = json::array();
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'eos_token_id'", "empty list"});
  j = KimiLinearJson();
  j["intermediate_size"] = 0;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'intermediate_size'", "layer 0 has a dense MLP"});
}

TEST(ModelConfigErrorTest, LayerListsMustCoverEveryLayerOnce) {
  json j = K3Json();
  auto& kda = j["text_config"]["linear_attn_config"]["kda_layers"];
  kda.push_back(4);  // also in full_attn_layers
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"'text_config.linear_attn_config.", "layer 4 a second time", "exactly one"});
  j = K3Json();
  j["text_config"]["linear_attn_config"]["kda_layers"].erase(0);  // layer 1 now missing
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"kda_layers", "miss layer 1 of 1..93"});
  j = K3Json();
  j["text_config"]["linear_attn_config"]["kda_layers"][0] = 0;  // 0-based by mistake
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"kda_layers[0]'", "[1, 93]", "found 0"});
  j = K3Json();
  j["text_config"]["linear_attn_config"]["full_attn_layers"].push_back(94);
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"full_attn_layers[24]'", "found 94"});
}

TEST(ModelConfigErrorTest, Quantization) {
  json j = K3Json();
  j["quantization_config"]["quant_method"] = "gptq";
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"'quantization_config.quant_method'", "gptq"});
  j = K3Json();
  j["quantization_config"]["config_groups"]["group_0"]["format"] = "nvfp4-pack-quantized";
  ExpectError(Parse(j), StatusCode::kUnimplemented,
              {"'quantization_config.config_groups.group_0.format'", "nvfp4-pack-quantized"});
  j = K3Json();
  j["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 16;
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"group_size", "16"});
  j = K3Json();
  j["text_config"]["moe_intermediate_size"] = 3000;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"divisible by 32", "moe_intermediate_size = 3000"});
  j = K3Json();
  j["text_config"]["routed_expert_hidden_size"] = 3580;
  ExpectError(Parse(j), StatusCode::kInvalidArgument,
              {"divisible by 32", "routed_expert_hidden_size = 3580"});
  j = K3Json();
  j["quantization_config"].erase("format");
  j["quantization_config"].erase("config_groups");
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'quantization_config.format'", "missing"});
}

TEST(ModelConfigErrorTest, UnsupportedActivationAndRouter) {
  json j = K3Json();
  j["text_config"]["hidden_act"] = "gelu";
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"'text_config.hidden_act'", "gelu"});
  j = K3Json();
  j["text_config"]["moe_router_activation_func"] = "softmax";
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"moe_router_activation_func", "softmax"});
  j = K3Json();
  j["text_config"]["mla_use_nope"] = false;
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"'text_config.mla_use_nope'", "without RoPE"});
  j = K3Json();
  j["text_config"]["num_expert_group"] = 8;
  j["text_config"]["topk_group"] = 4;
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"'text_config.topk_group' = 4", "group-restricted"});
  j["text_config"]["topk_group"] = 8;
  EXPECT_TRUE(Parse(j).ok());
}

// The published K3 vision_config (official KimiK3VisionConfig field names; docs/formats.md "Vision tower").
json K3VisionJson() {
  return json{{"patch_size", 14},
              {"init_pos_emb_height", 64},
              {"init_pos_emb_width", 64},
              {"init_pos_emb_time", 4},
              {"pos_emb_type", "divided_fixed"},
              {"vt_num_attention_heads", 12},
              {"vt_num_hidden_layers", 27},
              {"vt_hidden_size", 1024},
              {"vt_intermediate_size", 4096},
              {"merge_kernel_size", {2, 2}},
              {"video_attn_type", "spatial_temporal"},
              {"merge_type", "sd2_tpool"},
              {"_attn_implementation", "flash_attention_2"},
              {"mm_projector_type", "patchmergerv2"},
              {"projector_hidden_act", "gelu"},
              {"projector_ln_eps", 1e-5},
              {"qkv_hidden_size", 1536},
              {"norm_type", "rmsnorm"},
              {"attn_bias", false},
              {"patch_embed_proj_bias", false},
              {"mlp_type", "mlp2"},
              {"linear_bias", false},
              {"activation_func", "gelu_pytorch_tanh"},
              {"pos_emb_interpolation_mode", "bilinear"},
              {"text_hidden_size", 7168}};
}

TEST(VisionConfigTest, AbsentMeansTextOnly) {
  json j = K3Json();
  j.erase("vision_config");
  auto cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->vision.has_value());
  EXPECT_FALSE(ModelConfigToJson(*cfg).contains("vision_config"));
}

TEST(VisionConfigTest, ParsesRealK3VisionConfig) {
  json j = K3Json();
  j["vision_config"] = K3VisionJson();
  j["media_placeholder_token_id"] = 163605;
  auto cfg = Parse(j);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_TRUE(cfg->vision.has_value());
  const VisionConfig& v = *cfg->vision;
  EXPECT_EQ(v.patch_size, 14);
  EXPECT_EQ(v.patch_values(), 588);
  EXPECT_EQ(v.hidden_size, 1024);
  EXPECT_EQ(v.num_layers, 27);
  EXPECT_EQ(v.num_heads, 12);
  EXPECT_EQ(v.head_dim(), 128);
  EXPECT_EQ(v.intermediate_size, 4096);
  EXPECT_EQ(v.pos_emb_height, 64);
  EXPECT_EQ(v.pos_emb_width, 64);
  EXPECT_EQ(v.merge_kernel_height, 2);
  EXPECT_EQ(v.merge_kernel_width, 2);
  EXPECT_EQ(v.merged_width(), 4096);
  EXPECT_EQ(v.text_hidden_size, 7168);
  EXPECT_EQ(v.rms_norm_eps, std::numeric_limits<float>::epsilon());
  EXPECT_FLOAT_EQ(v.projector_ln_eps, 1e-5f);
  EXPECT_EQ(v.media_placeholder_token_id, 163605);
  // Round trip, and our own eps field overrides the default.
  auto again = Parse(ModelConfigToJson(*cfg));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *cfg);
  j["vision_config"]["vt_rms_norm_eps"] = 0.0078125;
  auto eps = Parse(j);
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  EXPECT_EQ(eps->vision->rms_norm_eps, 0.0078125f);
  // qkv_hidden_size null falls back to vt_hidden_size; text_hidden_size follows the text tower.
  j["vision_config"]["qkv_hidden_size"] = nullptr;
  j["vision_config"]["vt_num_attention_heads"] = 16;
  j["vision_config"]["text_hidden_size"] = 2304;
  auto defaults = Parse(j);
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->vision->qkv_hidden_size, 1024);
  EXPECT_EQ(defaults->vision->text_hidden_size, 7168);
  // Absent fields get the official class's defaults (K3's values), as a trimmed copy relies on.
  j = K3Json();
  j["vision_config"] = json{{"vt_hidden_size", 1152}};
  auto trimmed = Parse(j);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status().ToString();
  EXPECT_EQ(trimmed->vision->hidden_size, 1152);
  EXPECT_EQ(trimmed->vision->num_layers, 27);
  EXPECT_EQ(trimmed->vision->qkv_hidden_size, 1536);
  EXPECT_EQ(trimmed->vision->pos_emb_height, 64);
}

TEST(VisionConfigTest, ErrorsNameTheField) {
  auto with = [](const char* key, json value) {
    json j = K3Json();
    j["vision_config"] = K3VisionJson();
    j["vision_config"][key] = std::move(value);
    return Parse(j);
  };
  ExpectError(with("vt_hidden_size", "big"), StatusCode::kInvalidArgument,
              {"ckpt/config.json", "'vision_config.vt_hidden_size'", "integer"});
  ExpectError(with("vt_num_hidden_layers", 0), StatusCode::kInvalidArgument,
              {"'vision_config.vt_num_hidden_layers'", "must be in"});
  ExpectError(with("merge_kernel_size", json{2, 2, 2}), StatusCode::kInvalidArgument,
              {"'vision_config.merge_kernel_size'", "2 sizes"});
  ExpectError(with("qkv_hidden_size", 1540), StatusCode::kInvalidArgument,
              {"'vision_config.qkv_hidden_size'"});
  ExpectError(with("vt_rms_norm_eps", -1.0), StatusCode::kInvalidArgument,
              {"'vision_config.vt_rms_norm_eps'"});
  ExpectError(with("merge_type", "sd2"), StatusCode::kUnimplemented,
              {"'vision_config.merge_type'", "\"sd2\""});
  ExpectError(with("mm_projector_type", "patchmerger"), StatusCode::kUnimplemented,
              {"'vision_config.mm_projector_type'", "\"patchmerger\""});
  ExpectError(with("pos_emb_interpolation_mode", "bicubic"), StatusCode::kUnimplemented,
              {"'vision_config.pos_emb_interpolation_mode'", "bicubic"});
  ExpectError(with("video_attn_type", "temporal"), StatusCode::kUnimplemented,
              {"'vision_config.video_attn_type'"});
  ExpectError(with("norm_type", "layernorm"), StatusCode::kUnimplemented, {"'vision_config.norm_type'"});
  ExpectError(with("linear_bias", true), StatusCode::kUnimplemented, {"'vision_config.linear_bias'"});
  json j = K3Json();
  j["vision_config"] = K3VisionJson();
  j["media_placeholder_token_id"] = 163840;
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'media_placeholder_token_id'"});
  j = K3Json();
  j["vision_config"] = "x";
  ExpectError(Parse(j), StatusCode::kInvalidArgument, {"'vision_config'", "object"});
  j = KimiLinearJson();
  j["vision_config"] = K3VisionJson();
  ExpectError(Parse(j), StatusCode::kUnimplemented, {"'vision_config'", "kimi_linear"});
}

}  // namespace
}  // namespace k3::io
