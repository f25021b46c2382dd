// ProcessorConfig: K3's values and preprocessor_config.json parsing.
#include "src/image/config.h"

#include <nlohmann/json.hpp>

namespace k3::image {
namespace {

using nlohmann::json;

// Reads an integer field in [lo, hi]; `path` names it in errors.
Result<int64_t> ReadInt(const json& value, std::string_view file, std::string_view path, int64_t lo,
                        int64_t hi) {
  if (!value.is_number_integer())
    return InvalidArgument("{}: {} must be an integer, got {}", file, path, value.dump());
  const int64_t v = value.get<int64_t>();
  if (v < lo || v > hi) return InvalidArgument("{}: {} is {}, expected {}..{}", file, path, v, lo, hi);
  return v;
}

Result<std::array<double, 3>> ReadTriple(const json& value, std::string_view file, std::string_view path,
                                         bool positive) {
  if (!value.is_array() || value.size() != 3)
    return InvalidArgument("{}: {} must be an array of 3 numbers, got {}", file, path, value.dump());
  std::array<double, 3> out{};
  for (int i = 0; i < 3; ++i) {
    if (!value[i].is_number()) return InvalidArgument("{}: {}[{}] is not a number", file, path, i);
    out[i] = value[i].get<double>();
    if (positive && !(out[i] > 0))
      return InvalidArgument("{}: {}[{}] is {}, expected > 0", file, path, i, out[i]);
  }
  return out;
}

Result<TransparentBackground> ReadBackground(const json& value, std::string_view file) {
  if (!value.is_object())
    return InvalidArgument("{}: transparent_bg_config must be an object or null, got {}", file, value.dump());
  TransparentBackground bg;
  for (const auto& [key, field] : value.items()) {
    const std::string path = "transparent_bg_config." + key;
    if (key == "pattern") {
      const std::string name = field.is_string() ? field.get<std::string>() : "";
      if (name == "white")
        bg.pattern = BackgroundPattern::kWhite;
      else if (name == "black")
        bg.pattern = BackgroundPattern::kBlack;
      else if (name == "gray")
        bg.pattern = BackgroundPattern::kGray;
      else if (name == "chessboard")
        bg.pattern = BackgroundPattern::kChessboard;
      else
        return InvalidArgument("{}: {} is {}, expected \"white\", \"black\", \"gray\" or \"chessboard\"",
                               file, path, field.dump());
    } else if (key == "chessboard_square_size") {
      K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt(field, file, path, 1, 1 << 20));
      bg.chessboard_square_size = static_cast<int>(v);
    } else if (key == "chessboard_square_on_top_left") {
      if (!field.is_boolean()) return InvalidArgument("{}: {} must be true or false", file, path);
      bg.chessboard_square_on_top_left = field.get<bool>();
    } else if (key == "chessboard_white_value") {
      K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt(field, file, path, 0, 255));
      bg.chessboard_white_value = static_cast<int>(v);
    } else if (key == "chessboard_gray_value") {
      K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt(field, file, path, 0, 255));
      bg.chessboard_gray_value = static_cast<int>(v);
    } else {
      return InvalidArgument("{}: unknown field {} (the reference's dataclass would refuse it)", file, path);
    }
  }
  return bg;
}

}  // namespace

uint8_t TransparentBackground::ValueAt(int x, int y) const {
  switch (pattern) {
    case BackgroundPattern::kWhite:
      return 255;
    case BackgroundPattern::kBlack:
      return 0;
    case BackgroundPattern::kGray:
      return 128;
    case BackgroundPattern::kChessboard:
      break;
  }
  const int parity = (y / chessboard_square_size + x / chessboard_square_size) % 2;
  const int gray_parity = chessboard_square_on_top_left ? 1 : 0;
  return static_cast<uint8_t>(parity == gray_parity ? chessboard_gray_value : chessboard_white_value);
}

ProcessorConfig K3ProcessorConfig() {
  ProcessorConfig c;
  c.patch_size = 14;
  c.merge_kernel = {2, 2};
  c.in_patch_limit = 65536;
  c.patch_limit_on_one_side = 512;
  c.fixed_output_tokens.reset();
  c.image_mean = {0.5, 0.5, 0.5};
  c.image_std = {0.5, 0.5, 0.5};
  TransparentBackground bg;
  bg.pattern = BackgroundPattern::kChessboard;
  bg.chessboard_square_size = 8;
  bg.chessboard_square_on_top_left = true;
  bg.chessboard_white_value = 255;
  bg.chessboard_gray_value = 180;
  c.transparent_bg = bg;
  c.fill_stage = FillStage::kAfterResize;
  return c;
}

Result<ProcessorConfig> ParseProcessorConfig(std::string_view json_text, std::string_view file_name) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("{}: not valid JSON", file_name);
  if (!root.is_object()) return InvalidArgument("{}: expected a JSON object", file_name);
  const std::string file = std::string(file_name);
  const json* cfg = &root;
  std::string prefix;
  if (auto it = root.find("media_proc_cfg"); it != root.end()) {
    if (!it->is_object()) return InvalidArgument("{}: media_proc_cfg must be an object", file);
    cfg = &*it;
    prefix = "media_proc_cfg.";
  }
  const auto field = [&](const char* name) -> const json* {
    auto it = cfg->find(name);
    return it == cfg->end() ? nullptr : &*it;
  };
  const auto required = [&](const char* name) -> Result<const json*> {
    const json* v = field(name);
    if (v == nullptr) return InvalidArgument("{}: {}{} is missing", file, prefix, name);
    return v;
  };

  ProcessorConfig c;
  c.transparent_bg.reset();
  c.fill_stage = FillStage::kBeforeResize;  // the reference's default
  K3_ASSIGN_OR_RETURN(const json* patch, required("patch_size"));
  K3_ASSIGN_OR_RETURN(const int64_t patch_size, ReadInt(*patch, file, prefix + "patch_size", 1, 1024));
  c.patch_size = static_cast<int>(patch_size);

  K3_ASSIGN_OR_RETURN(const json* merge, required("merge_kernel_size"));
  if (merge->is_array()) {
    if (merge->size() != 2)
      return InvalidArgument("{}: {}merge_kernel_size must be an integer or [h, w], got {}", file, prefix,
                             merge->dump());
    for (int i = 0; i < 2; ++i) {
      K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt((*merge)[i], file,
                                                   fmt::format("{}merge_kernel_size[{}]", prefix, i), 1, 64));
      c.merge_kernel[i] = static_cast<int>(v);
    }
  } else {
    K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt(*merge, file, prefix + "merge_kernel_size", 1, 64));
    c.merge_kernel = {static_cast<int>(v), static_cast<int>(v)};
  }

  K3_ASSIGN_OR_RETURN(const json* limit, required("in_patch_limit"));
  K3_ASSIGN_OR_RETURN(c.in_patch_limit,
                      ReadInt(*limit, file, prefix + "in_patch_limit", 1, int64_t{1} << 40));
  K3_ASSIGN_OR_RETURN(const json* side, required("patch_limit_on_one_side"));
  K3_ASSIGN_OR_RETURN(const int64_t side_limit,
                      ReadInt(*side, file, prefix + "patch_limit_on_one_side", 1, 1 << 16));
  c.patch_limit_on_one_side = static_cast<int>(side_limit);
  for (int i = 0; i < 2; ++i) {
    if (c.patch_limit_on_one_side % c.merge_kernel[i] != 0)
      return InvalidArgument("{}: {}patch_limit_on_one_side {} is not a multiple of merge_kernel_size {}",
                             file, prefix, c.patch_limit_on_one_side, c.merge_kernel[i]);
  }

  if (const json* fixed = field("fixed_output_tokens"); fixed != nullptr && !fixed->is_null()) {
    K3_ASSIGN_OR_RETURN(const int64_t v, ReadInt(*fixed, file, prefix + "fixed_output_tokens", 1, 1 << 30));
    c.fixed_output_tokens = v;
  }
  K3_ASSIGN_OR_RETURN(const json* mean, required("image_mean"));
  K3_ASSIGN_OR_RETURN(c.image_mean, ReadTriple(*mean, file, prefix + "image_mean", false));
  K3_ASSIGN_OR_RETURN(const json* std_dev, required("image_std"));
  K3_ASSIGN_OR_RETURN(c.image_std, ReadTriple(*std_dev, file, prefix + "image_std", true));

  if (const json* bg = field("transparent_bg_config"); bg != nullptr && !bg->is_null()) {
    auto parsed = ReadBackground(*bg, file);
    if (!parsed.ok()) return parsed.status();
    c.transparent_bg = *parsed;
  }
  if (const json* stage = field("transparent_bg_fill_stage"); stage != nullptr) {
    const std::string name = stage->is_string() ? stage->get<std::string>() : "";
    if (name == "before_resize")
      c.fill_stage = FillStage::kBeforeResize;
    else if (name == "after_resize")
      c.fill_stage = FillStage::kAfterResize;
    else
      return InvalidArgument(
          "{}: {}transparent_bg_fill_stage is {}, expected \"before_resize\" or \"after_resize\"", file,
          prefix, stage->dump());
  }
  return c;
}

}  // namespace k3::image
