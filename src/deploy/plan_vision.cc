// Vision tower parameters and per-image activation memory (see plan_vision.h for the formulas).
#include "src/deploy/plan_vision.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/base/file.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;

// A positive integer field, `fallback` when absent (0: required).
Result<int64_t> Width(const Json& object, const std::string& where, std::initializer_list<const char*> names,
                      int64_t fallback) {
  for (const char* name : names) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > (int64_t{1} << 24)) {
      return InvalidArgument("{}: vision_config.{} must be a positive integer", where, name);
    }
    return it->get<int64_t>();
  }
  if (fallback > 0) return fallback;
  return InvalidArgument("{}: vision_config has no {}", where, *names.begin());
}

}  // namespace

VisionTowerSpec K3VisionTower() {
  VisionTowerSpec s;
  s.source =
      "K3's published tower (spec vision.md §1): hidden 1024, 27 layers, 12 heads x 128, MLP 4096, patch 14, "
      "merge 2x2, positions 64x64, projector to 7168, bf16; in_patch_limit 65,536";
  s.hidden = 1024;
  s.layers = 27;
  s.heads = 12;
  s.qkv_hidden = 12 * 128;
  s.intermediate = 4096;
  return s;
}

VisionPlan PlanVision(const VisionTowerSpec& s) {
  VisionPlan v;
  v.spec = s;
  const int64_t h = s.hidden, q = s.qkv_hidden, inter = s.intermediate, b = s.dtype_bytes;
  const int64_t per_block = 2 * h + 3 * q * h + q * h + 2 * h * inter;
  v.tower_params = 3 * s.patch * s.patch * h + s.pos_emb_h * s.pos_emb_w * h + s.layers * per_block + h;
  const int64_t merged = s.merge_h * s.merge_w * h;
  v.projector_params = merged * merged + merged * s.text_hidden + s.text_hidden;
  const int64_t S = s.in_patch_limit;
  v.max_patches = S;
  v.hidden_states_bytes = 2 * S * h * b;
  v.attention_bytes = 4 * S * q * b;
  v.mlp_bytes = 2 * S * inter * b;
  v.scores_per_head_bytes = S * S * b;
  v.activation_bytes = v.hidden_states_bytes + std::max(v.attention_bytes, v.mlp_bytes);
  v.activation_dense_bytes = v.hidden_states_bytes + v.attention_bytes + v.scores_per_head_bytes;
  return v;
}

Result<std::optional<VisionTowerSpec>> VisionTowerFromConfigText(const std::string& where,
                                                                 const std::string& config_json,
                                                                 const std::string& preprocessor_json) {
  const Json config = Json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return InvalidArgument("{}: not a JSON object", where);
  auto vc = config.find("vision_config");
  if (vc == config.end() || vc->is_null()) return std::optional<VisionTowerSpec>();
  if (!vc->is_object()) return InvalidArgument("{}: vision_config must be an object", where);
  VisionTowerSpec s;
  s.source = "vision_config of " + where;
  s.in_weight_bytes = true;
  K3_ASSIGN_OR_RETURN(s.hidden, Width(*vc, where, {"vt_hidden_size", "hidden_size"}, 0));
  K3_ASSIGN_OR_RETURN(s.layers, Width(*vc, where, {"vt_num_hidden_layers", "num_hidden_layers"}, 0));
  K3_ASSIGN_OR_RETURN(s.heads, Width(*vc, where, {"vt_num_attention_heads", "num_attention_heads"}, 0));
  K3_ASSIGN_OR_RETURN(s.intermediate, Width(*vc, where, {"vt_intermediate_size", "intermediate_size"}, 0));
  K3_ASSIGN_OR_RETURN(s.qkv_hidden, Width(*vc, where, {"qkv_hidden_size"}, s.hidden));
  K3_ASSIGN_OR_RETURN(s.patch, Width(*vc, where, {"patch_size"}, 14));
  K3_ASSIGN_OR_RETURN(s.pos_emb_h, Width(*vc, where, {"init_pos_emb_height"}, 64));
  K3_ASSIGN_OR_RETURN(s.pos_emb_w, Width(*vc, where, {"init_pos_emb_width"}, 64));
  if (auto m = vc->find("merge_kernel_size"); m != vc->end()) {
    if (m->is_number_integer() && m->get<int64_t>() > 0) {
      s.merge_h = s.merge_w = m->get<int64_t>();
    } else if (m->is_array() && m->size() == 2 && (*m)[0].is_number_integer() &&
               (*m)[1].is_number_integer() && (*m)[0].get<int64_t>() > 0 && (*m)[1].get<int64_t>() > 0) {
      s.merge_h = (*m)[0].get<int64_t>();
      s.merge_w = (*m)[1].get<int64_t>();
    } else {
      return InvalidArgument("{}: vision_config.merge_kernel_size must be a positive integer or [h, w]",
                             where);
    }
  }
  const Json* text = &config;
  if (auto t = config.find("text_config"); t != config.end() && t->is_object()) text = &*t;
  K3_ASSIGN_OR_RETURN(int64_t text_hidden, Width(*text, where, {"hidden_size"}, 7168));
  K3_ASSIGN_OR_RETURN(s.text_hidden, Width(*vc, where, {"text_hidden_size"}, text_hidden));
  if (!preprocessor_json.empty()) {
    const Json pre = Json::parse(preprocessor_json, nullptr, false);
    if (pre.is_object()) {
      const Json* cfg = &pre;
      if (auto m = pre.find("media_proc_cfg"); m != pre.end() && m->is_object()) cfg = &*m;
      if (auto l = cfg->find("in_patch_limit"); l != cfg->end() && l->is_number_integer() &&
                                                l->get<int64_t>() > 0 &&
                                                l->get<int64_t>() <= (int64_t{1} << 24)) {
        s.in_patch_limit = l->get<int64_t>();
      }
    }
  }
  if (s.qkv_hidden % s.heads != 0) {
    return InvalidArgument("{}: vision_config.qkv_hidden_size {} is not a multiple of the {} heads", where,
                           s.qkv_hidden, s.heads);
  }
  return std::optional<VisionTowerSpec>(s);
}

Result<std::optional<VisionTowerSpec>> VisionTowerFor(const ModelSpec& model, const std::string& model_arg,
                                                      bool from_catalog) {
  if (from_catalog) {
    if (model.family == "kimi_k3") return std::optional<VisionTowerSpec>(K3VisionTower());
    return std::optional<VisionTowerSpec>();
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool is_dir = fs::is_directory(model_arg, ec);
  const fs::path dir = is_dir ? fs::path(model_arg) : fs::path(model_arg).parent_path();
  const fs::path config_path = is_dir ? dir / "config.json" : fs::path(model_arg);
  K3_ASSIGN_OR_RETURN(std::string config, ReadFileToString(config_path.string()));
  std::string preprocessor;
  const fs::path pre_path = (dir.empty() ? fs::path(".") : dir) / "preprocessor_config.json";
  if (fs::exists(pre_path, ec)) {
    K3_ASSIGN_OR_RETURN(preprocessor, ReadFileToString(pre_path.string()));
  }
  return VisionTowerFromConfigText(config_path.string(), config, preprocessor);
}

}  // namespace k3::deploy
