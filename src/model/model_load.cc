// Model::Load: config.json + the checkpoint's shards (mmap'd, used in place) -> Model::FromTensors.
#include <memory>

#include "src/io/checkpoint.h"
#include "src/io/model_config.h"
#include "src/model/model.h"

namespace k3::model {

Result<std::unique_ptr<Model>> Model::Load(const std::string& dir, ThreadPool* pool,
                                           const Parallelism& parallelism) {
  K3_ASSIGN_OR_RETURN(io::ModelConfig cfg, io::LoadModelConfig(dir));
  K3_ASSIGN_OR_RETURN(std::unique_ptr<io::Checkpoint> opened, io::Checkpoint::Open(dir));
  std::shared_ptr<const io::Checkpoint> checkpoint(std::move(opened));
  auto lookup = [&checkpoint](const std::string& name) { return checkpoint->Find(name); };
  auto model = FromTensors(cfg, lookup, checkpoint, pool, parallelism);
  if (!model.ok()) return model.status().WithPrefix(dir);
  return model;
}

}  // namespace k3::model
