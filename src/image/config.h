// Kimi K3's image processor settings: the `media_proc_cfg` object of the checkpoint's
// preprocessor_config.json (official field names), with K3's published values as defaults.
// docs/formats.md "Images" says where each value was read.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3::image {

// `transparent_bg_config`: what transparent pixels are composited over.
enum class BackgroundPattern { kWhite, kBlack, kGray, kChessboard };
// `transparent_bg_fill_stage`: composite before the resize (the image is RGB from then on) or after it
// (the resize keeps alpha, premultiplied, as Pillow does).
enum class FillStage { kBeforeResize, kAfterResize };

struct TransparentBackground {
  // Defaults are the reference dataclass's (used for a field the file leaves out), not K3's values.
  BackgroundPattern pattern = BackgroundPattern::kBlack;
  int chessboard_square_size = 16;
  bool chessboard_square_on_top_left = true;  // true: the top-left square is white
  int chessboard_white_value = 255;
  int chessboard_gray_value = 200;
  // The background value (all three channels) under pixel (x, y).
  uint8_t ValueAt(int x, int y) const;
};

struct ProcessorConfig {
  int patch_size = 14;
  std::array<int, 2> merge_kernel = {2, 2};    // `merge_kernel_size` (an int n means {n, n})
  int64_t in_patch_limit = 65536;              // patch budget before merging
  int patch_limit_on_one_side = 512;           // patches along one side
  std::optional<int64_t> fixed_output_tokens;  // null in K3: the token count follows the grid
  std::array<double, 3> image_mean = {0.5, 0.5, 0.5};
  std::array<double, 3> image_std = {0.5, 0.5, 0.5};
  // Absent (null): alpha is dropped (Pillow's convert("RGB")) instead of composited.
  std::optional<TransparentBackground> transparent_bg;
  FillStage fill_stage = FillStage::kAfterResize;  // the reference's default when absent is kBeforeResize
};

// K3's published media_proc_cfg: patch 14, merge 2, in_patch_limit 65536, patch_limit_on_one_side 512,
// mean = std = 0.5, chessboard 8 px (white 255 top-left, gray 180) composited after the resize.
ProcessorConfig K3ProcessorConfig();

// Parses preprocessor_config.json text: the fields of its "media_proc_cfg" object (or of the top level
// when there is none). patch_size, merge_kernel_size, in_patch_limit, patch_limit_on_one_side,
// image_mean and image_std are required (the reference reads them unconditionally); errors name
// `file_name` and the field.
Result<ProcessorConfig> ParseProcessorConfig(std::string_view json_text, std::string_view file_name);

}  // namespace k3::image
