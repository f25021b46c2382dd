// ObjectStore's convenience calls built on the virtual interface (object_store.h).
#include "src/storage/object_store.h"

namespace k3::storage {

bool IsPartialStateKey(std::string_view key) {
  return key.ends_with(kPartialFileSuffix) || key.ends_with(kUploadJournalSuffix);
}

Status ObjectStore::WriteAll(std::string_view key, std::span<const uint8_t> data) {
  WriteOptions options;
  options.expected_size = data.size();
  options.resume = false;
  K3_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer, OpenWriter(key, options));
  K3_RETURN_IF_ERROR(writer->Append(data));
  return writer->Commit();
}

Result<std::string> ObjectStore::ReadAll(std::string_view key) {
  K3_ASSIGN_OR_RETURN(ObjectInfo info, Stat(key));
  std::string out(info.size, '\0');
  K3_RETURN_IF_ERROR(
      ReadRange(key, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size())));
  return out;
}

}  // namespace k3::storage
