// LoadForRank: the directory and bucket branches of loading one rank's member.
#include "src/model/load_for_rank.h"

#include <fmt/format.h>

namespace k3::model {

std::optional<storage::ObjectUri> RemoteModelUri(const std::string& source) {
  if (source.find("://") == std::string::npos) return std::nullopt;
  auto uri = storage::ParseObjectUri(source);
  if (!uri.ok() || uri->scheme == storage::UriScheme::kFile) return std::nullopt;
  return *uri;
}

Result<RankLoad> LoadForRank(const std::string& source, const dist::GroupPlan& group, ThreadPool* pool,
                             RankLoadOptions options) {
  RankLoad out;
  if (std::optional<storage::ObjectUri> uri = RemoteModelUri(source)) {
    K3_ASSIGN_OR_RETURN(std::unique_ptr<storage::ObjectStore> store,
                        storage::OpenObjectStore(*uri, options.store));
    options.remote.progress = options.progress;
    if (options.progress != nullptr) options.progress->SetPhase(fmt::format("listing {}", store->Describe()));
    K3_ASSIGN_OR_RETURN(RemoteGroupMember remote,
                        JoinGroupAndLoadFromStore(*store, pool, group, options.version,
                                                  std::move(options.on_failure), options.remote));
    out.member = std::move(remote.member);
    out.remote_files = std::move(remote.files);
    return out;
  }
  std::string fingerprint;
  if (group.world > 1) {
    K3_ASSIGN_OR_RETURN(fingerprint, dist::GroupFingerprint(options.version, source));
  }
  K3_ASSIGN_OR_RETURN(out.member,
                      JoinGroupAndLoad(source, pool, group, fingerprint, std::move(options.on_failure)));
  return out;
}

}  // namespace k3::model
