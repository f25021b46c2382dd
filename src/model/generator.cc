// GenerateCheckpoint: walks ListTensors(config) in order, draws each tensor's values (weight_init.h),
// encodes them as the checkpoint stores them (bf16 round-to-nearest-even, f32, or an MXFP4 packed/scale
// pair) and streams them into a ShardedCheckpointWriter; config.json comes from io::ModelConfigToJson.
// Rows are generated in parallel; the bytes do not depend on the thread count.
#include "src/model/generator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "src/base/bf16.h"
#include "src/base/file.h"
#include "src/base/thread_pool.h"
#include "src/io/checkpoint.h"
#include "src/io/dtype.h"
#include "src/model/presets.h"
#include "src/model/staged_directory.h"
#include "src/model/tensors.h"
#include "src/model/weight_init.h"

namespace k3::model {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

// Rows are handed to threads in chunks of about this many values.
constexpr int64_t kValuesPerTask = 1 << 16;

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Runs fn(first_row, end_row, row_scratch) over all rows of `spec`, in parallel chunks.
template <typename Fn>
void ForEachRowChunk(const TensorSpec& spec, ThreadPool& pool, const Fn& fn) {
  const int64_t rows = LogicalRowCount(spec), row_length = LogicalRowLength(spec);
  const int64_t rows_per_task = std::max<int64_t>(1, kValuesPerTask / std::max<int64_t>(1, row_length));
  const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  pool.ParallelFor(static_cast<size_t>(tasks), [&](size_t task, size_t) {
    std::vector<float> scratch(static_cast<size_t>(row_length));
    const int64_t first = static_cast<int64_t>(task) * rows_per_task;
    fn(first, std::min(rows, first + rows_per_task), scratch.data());
  });
}

// A bf16 or f32 tensor.
Result<io::TensorToWrite> GenerateDense(const io::ModelConfig& cfg, const TensorSpec& spec, uint64_t seed,
                                        ThreadPool& pool) {
  if (spec.dtype != io::DType::kBF16 && spec.dtype != io::DType::kF32) {
    return Internal("gen-model: tensor {} has dtype {}, which the generator cannot fill", spec.name,
                    io::DTypeName(spec.dtype));
  }
  const int64_t row_length = LogicalRowLength(spec);
  if (LogicalRowCount(spec) * row_length != NumElements(spec.shape)) {
    return Internal("gen-model: tensor {} has an inconsistent shape", spec.name);
  }
  const size_t element_bytes = io::DTypeSize(spec.dtype);
  io::TensorToWrite out{spec.name, spec.dtype, spec.shape, {}};
  out.data.resize(static_cast<size_t>(NumElements(spec.shape)) * element_bytes);
  const uint64_t tensor_seed = TensorSeed(seed, spec.name);
  ForEachRowChunk(spec, pool, [&](int64_t first, int64_t end, float* row) {
    for (int64_t r = first; r < end; ++r) {
      InitRow(cfg, spec, tensor_seed, r, row);
      uint8_t* dst = out.data.data() + static_cast<size_t>(r * row_length) * element_bytes;
      for (int64_t i = 0; i < row_length; ++i) {
        if (spec.dtype == io::DType::kBF16) {
          const uint16_t bits = FloatToBf16(row[i]).bits;
          std::memcpy(dst + 2 * i, &bits, 2);
        } else {
          std::memcpy(dst + 4 * i, &row[i], 4);
        }
      }
    }
  });
  return out;
}

// An MXFP4 expert matrix: the packed codes and the scales (the next ListTensors entry).
Result<std::pair<io::TensorToWrite, io::TensorToWrite>> GenerateMxfp4(const io::ModelConfig& cfg,
                                                                      const TensorSpec& packed_spec,
                                                                      const TensorSpec& scale_spec,
                                                                      uint64_t seed, ThreadPool& pool) {
  const int64_t out_dim = LogicalRowCount(packed_spec), in_dim = LogicalRowLength(packed_spec);
  if (cfg.mxfp4_group_size != 32 || in_dim % 32 != 0 ||
      packed_spec.shape != std::vector<int64_t>{out_dim, in_dim / 2} ||
      scale_spec.shape != std::vector<int64_t>{out_dim, in_dim / 32}) {
    return Internal("gen-model: MXFP4 tensors {} / {} do not form a [{}, {}] matrix in groups of 32",
                    packed_spec.name, scale_spec.name, out_dim, in_dim);
  }
  io::TensorToWrite packed{packed_spec.name, io::DType::kU8, packed_spec.shape, {}};
  io::TensorToWrite scales{scale_spec.name, io::DType::kU8, scale_spec.shape, {}};
  packed.data.resize(static_cast<size_t>(out_dim * in_dim / 2));
  scales.data.resize(static_cast<size_t>(out_dim * in_dim / 32));
  const uint64_t tensor_seed = TensorSeed(seed, packed_spec.name);
  ForEachRowChunk(packed_spec, pool, [&](int64_t first, int64_t end, float* row) {
    for (int64_t r = first; r < end; ++r) {
      InitRow(cfg, packed_spec, tensor_seed, r, row);
      QuantizeMxfp4Row(row, static_cast<size_t>(in_dim), packed.data.data() + r * (in_dim / 2),
                       scales.data.data() + r * (in_dim / 32));
    }
  });
  return std::make_pair(std::move(packed), std::move(scales));
}

// Writes config.json and all shards + index of `preset` into the existing directory `dir`.
Status WriteCheckpointFiles(const GeneratorPreset& preset, uint64_t seed, const std::string& dir) {
  const io::ModelConfig& cfg = preset.config;
  std::vector<TensorSpec> specs = ListTensors(cfg);
  // The vision tower after the text tensors: the text shards and their bytes are the same as without it.
  for (TensorSpec& spec : ListVisionTensors(cfg)) specs.push_back(std::move(spec));
  ThreadPool pool(0);
  io::ShardedCheckpointWriter writer(dir, preset.max_shard_bytes);
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    if (spec.init == InitKind::kMxfp4Packed) {
      if (i + 1 >= specs.size() || specs[i + 1].init != InitKind::kMxfp4Scale) {
        return Internal("gen-model: MXFP4 tensor {} is not followed by its scales", spec.name);
      }
      K3_ASSIGN_OR_RETURN(auto pair, GenerateMxfp4(cfg, spec, specs[i + 1], seed, pool));
      K3_RETURN_IF_ERROR(writer.Add(std::move(pair.first)));
      K3_RETURN_IF_ERROR(writer.Add(std::move(pair.second)));
      ++i;
    } else if (spec.init == InitKind::kMxfp4Scale || spec.init == InitKind::kSentinel) {
      return Internal("gen-model: tensor {} has no initialiser of its own", spec.name);
    } else {
      K3_ASSIGN_OR_RETURN(io::TensorToWrite tensor, GenerateDense(cfg, spec, seed, pool));
      K3_RETURN_IF_ERROR(writer.Add(std::move(tensor)));
    }
  }
  K3_RETURN_IF_ERROR(writer.Finish());
  if (cfg.vision.has_value()) {
    K3_RETURN_IF_ERROR(WriteFileAtomic(dir + "/preprocessor_config.json",
                                       PreprocessorConfigJson(*cfg.vision).dump(2) + "\n"));
  }
  return WriteFileAtomic(dir + "/config.json", io::ModelConfigToJson(cfg).dump(2) + "\n");
}

}  // namespace

nlohmann::json PreprocessorConfigJson(const io::VisionConfig& vision) {
  using nlohmann::json;
  // The official K3 image processor's media_proc_cfg (KimiK3VisionProcessor defaults; docs/formats.md
  // "Vision tower"), with the patch and merge sizes of this tower.
  json media = {
      {"in_patch_limit", 65536},
      {"patch_size", vision.patch_size},
      {"image_mean", {0.5, 0.5, 0.5}},
      {"image_std", {0.5, 0.5, 0.5}},
      {"merge_kernel_size", vision.merge_kernel_height},
      {"fixed_output_tokens", nullptr},
      {"patch_limit_on_one_side", 512},
      {"transparent_bg_config",
       {{"pattern", "chessboard"},
        {"chessboard_square_size", 8},
        {"chessboard_square_on_top_left", true},
        {"chessboard_white_value", 255},
        {"chessboard_gray_value", 180}}},
      {"transparent_bg_fill_stage", "after_resize"},
  };
  return json{{"image_processor_type", "KimiK3VisionProcessor"}, {"media_proc_cfg", std::move(media)}};
}

std::vector<std::string> GeneratorPresetNames() {
  std::vector<std::string> names;
  for (const GeneratorPreset& preset : GeneratorPresets()) names.push_back(preset.name);
  return names;
}

Result<io::ModelConfig> GeneratorPresetConfig(const std::string& preset) {
  K3_ASSIGN_OR_RETURN(GeneratorPreset found, FindGeneratorPreset(preset));
  return found.config;
}

Status GenerateCheckpoint(const std::string& preset, uint64_t seed, const std::string& out_dir) {
  K3_ASSIGN_OR_RETURN(GeneratorPreset found, FindGeneratorPreset(preset));
  K3_ASSIGN_OR_RETURN(std::string staged, MakeStagingDirectory(out_dir));
  Status status = WriteCheckpointFiles(found, seed, staged);
  if (status.ok()) status = PublishStagedDirectory(staged, out_dir);
  if (!status.ok()) RemoveStagingDirectory(staged);
  return status;
}

}  // namespace k3::model
