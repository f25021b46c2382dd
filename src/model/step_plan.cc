// StepPlan wire format (step_plan.h): a bounds-checked little-endian writer and reader.
#include "src/model/step_plan.h"

#include <cstring>

namespace k3::model {
namespace {

constexpr char kMagic[4] = {'K', '3', 'S', 'P'};
constexpr uint32_t kVersion = 3;  // 2: items carry the MLA cache dtype; 3: embedding runs (images)

class Writer {
 public:
  template <typename Tp>
  void Put(Tp v) {
    char bytes[sizeof(Tp)];
    std::memcpy(bytes, &v, sizeof(Tp));
    out_.append(bytes, sizeof(Tp));
  }
  void PutIds(const std::vector<int32_t>& ids) {
    Put<uint32_t>(static_cast<uint32_t>(ids.size()));
    if (!ids.empty()) out_.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
  }
  void Raw(const char* data, size_t n) { out_.append(data, n); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename Tp>
  bool Get(Tp* v) {
    if (in_.size() - pos_ < sizeof(Tp)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(Tp));
    pos_ += sizeof(Tp);
    return true;
  }
  // A u32 count (<= limit) then that many i32 ids.
  Status GetIds(const char* what, uint32_t limit, std::vector<int32_t>* ids) {
    uint32_t n = 0;
    if (!Get(&n)) return DataLoss("step plan: truncated before the {} count", what);
    if (n > limit) return DataLoss("step plan: {} {} is above the limit {}", n, what, limit);
    if ((in_.size() - pos_) / sizeof(int32_t) < n)
      return DataLoss("step plan: {} {} run past the end of the plan", n, what);
    ids->resize(n);
    if (n > 0) std::memcpy(ids->data(), in_.data() + pos_, size_t{n} * sizeof(int32_t));
    pos_ += size_t{n} * sizeof(int32_t);
    return OkStatus();
  }
  size_t left() const { return in_.size() - pos_; }
  // n u16 values (the caller checked n against left()).
  void GetU16s(size_t n, std::vector<uint16_t>* values) {
    values->resize(n);
    if (n > 0) std::memcpy(values->data(), in_.data() + pos_, n * sizeof(uint16_t));
    pos_ += n * sizeof(uint16_t);
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// An item's embedding runs: in row order, each non-empty and inside the item's tokens, values that fit.
Status GetEmbeddingRuns(Reader& r, StepItem& item) {
  uint32_t num_runs = 0;
  if (!r.Get(&num_runs)) return DataLoss("step plan: truncated before the embedding run count");
  if (num_runs > item.tokens.size())
    return DataLoss("step plan: {} embedding runs for {} tokens", num_runs, item.tokens.size());
  item.embeddings.resize(num_runs);
  int64_t next_free_row = 0;
  for (EmbeddingRun& run : item.embeddings) {
    uint32_t width = 0;
    if (!r.Get(&run.first_row) || !r.Get(&run.rows) || !r.Get(&width))
      return DataLoss("step plan: truncated inside an embedding run");
    const int64_t end = int64_t{run.first_row} + run.rows;
    if (run.first_row < next_free_row || run.rows <= 0 || end > static_cast<int64_t>(item.tokens.size()) ||
        width == 0 || width > static_cast<uint32_t>(kMaxEmbeddingWidth)) {
      return DataLoss("step plan: embedding run at row {} ({} rows, width {}) for {} tokens is out of range",
                      run.first_row, run.rows, width, item.tokens.size());
    }
    run.width = static_cast<int32_t>(width);
    const size_t values = static_cast<size_t>(run.rows) * width;
    if (r.left() / sizeof(uint16_t) < values)
      return DataLoss("step plan: embedding run at row {} runs past the end of the plan", run.first_row);
    r.GetU16s(values, &run.bf16);
    next_free_row = end;
  }
  return OkStatus();
}

}  // namespace

std::string EncodeStepPlan(const StepPlan& plan) { return EncodeStepPlan(plan, plan.sequence); }

std::string EncodeStepPlan(const StepPlan& plan, uint64_t sequence) {
  Writer w;
  w.Raw(kMagic, sizeof(kMagic));
  w.Put<uint32_t>(kVersion);
  w.Put<uint8_t>(static_cast<uint8_t>(plan.kind));
  w.Put<uint64_t>(sequence);
  w.Put<uint32_t>(static_cast<uint32_t>(plan.ops.size()));
  for (const StateOp& op : plan.ops) {
    w.Put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.Put<int32_t>(op.a);
    w.Put<int32_t>(op.b);
  }
  w.Put<uint32_t>(static_cast<uint32_t>(plan.items.size()));
  for (const StepItem& item : plan.items) {
    w.Put<int32_t>(item.slot);
    w.Put<int64_t>(item.start_pos);
    w.Put<uint8_t>(item.all_logits ? 1 : 0);
    w.Put<int32_t>(item.block_tokens);
    w.Put<uint8_t>(static_cast<uint8_t>(item.cache_dtype));
    w.PutIds(item.tokens);
    w.PutIds(item.blocks);
    w.Put<uint32_t>(static_cast<uint32_t>(item.embeddings.size()));
    for (const EmbeddingRun& run : item.embeddings) {
      w.Put<int32_t>(run.first_row);
      w.Put<int32_t>(run.rows);
      w.Put<uint32_t>(static_cast<uint32_t>(run.width));
      if (!run.bf16.empty())
        w.Raw(reinterpret_cast<const char*>(run.bf16.data()), run.bf16.size() * sizeof(uint16_t));
    }
  }
  return w.Take();
}

Result<StepPlan> DecodeStepPlan(std::string_view bytes) {
  if (bytes.size() > kMaxPlanBytes) return DataLoss("step plan: {} bytes is above the limit", bytes.size());
  Reader r(bytes);
  char magic[4];
  for (char& c : magic) {
    if (!r.Get(&c)) return DataLoss("step plan: truncated in the header ({} bytes)", bytes.size());
  }
  if (std::memcmp(magic, kMagic, 4) != 0) return DataLoss("step plan: bad magic (not a K3 step plan)");
  uint32_t version = 0;
  uint8_t kind = 0;
  StepPlan plan;
  if (!r.Get(&version) || !r.Get(&kind) || !r.Get(&plan.sequence))
    return DataLoss("step plan: truncated in the header");
  if (version != kVersion) {
    return DataLoss("step plan: version {} but this binary speaks {} (ranks run different k3 builds?)",
                    version, kVersion);
  }
  if (kind < 1 || kind > 3) return DataLoss("step plan: unknown kind {}", kind);
  plan.kind = static_cast<StepKind>(kind);
  uint32_t num_ops = 0;
  if (!r.Get(&num_ops)) return DataLoss("step plan: truncated before the op count");
  constexpr size_t kOpBytes = 1 + 4 + 4;
  if (num_ops > kMaxPlanOps || r.left() / kOpBytes < num_ops)
    return DataLoss("step plan: {} state ops do not fit the plan", num_ops);
  plan.ops.resize(num_ops);
  for (StateOp& op : plan.ops) {
    uint8_t op_kind = 0;
    (void)r.Get(&op_kind);
    (void)r.Get(&op.a);
    (void)r.Get(&op.b);
    if (op_kind < 1 || op_kind > 6) return DataLoss("step plan: unknown state op kind {}", op_kind);
    op.kind = static_cast<StateOpKind>(op_kind);
    const bool two_ids = op.kind != StateOpKind::kNew && op.kind != StateOpKind::kFree &&
                         op.kind != StateOpKind::kReleaseBlocks;
    if (op.a < 0 || op.a > kMaxSlotId || (two_ids && (op.b < 0 || op.b > kMaxSlotId)))
      return DataLoss("step plan: state op with slot or block id out of range ({}, {})", op.a, op.b);
  }
  uint32_t num_items = 0;
  if (!r.Get(&num_items)) return DataLoss("step plan: truncated before the item count");
  if (num_items > kMaxPlanItems) return DataLoss("step plan: {} items is above the limit", num_items);
  plan.items.resize(num_items);
  for (StepItem& item : plan.items) {
    uint8_t all_logits = 0, cache_dtype = 0;
    if (!r.Get(&item.slot) || !r.Get(&item.start_pos) || !r.Get(&all_logits) || !r.Get(&item.block_tokens) ||
        !r.Get(&cache_dtype))
      return DataLoss("step plan: truncated inside an item");
    if (item.slot < 0 || item.slot > kMaxSlotId || item.start_pos < 0 || all_logits > 1 ||
        item.block_tokens < 0 || cache_dtype > static_cast<uint8_t>(CacheDtype::kF32)) {
      return DataLoss(
          "step plan: item with slot {}, position {}, block size {}, cache dtype {} is out of range",
          item.slot, item.start_pos, item.block_tokens, cache_dtype);
    }
    item.cache_dtype = static_cast<CacheDtype>(cache_dtype);
    item.all_logits = all_logits == 1;
    K3_RETURN_IF_ERROR(r.GetIds("tokens", kMaxItemTokens, &item.tokens));
    K3_RETURN_IF_ERROR(r.GetIds("blocks", kMaxItemBlocks, &item.blocks));
    if (plan.kind == StepKind::kForward && item.tokens.empty())
      return DataLoss("step plan: item for slot {} has no tokens", item.slot);
    K3_RETURN_IF_ERROR(GetEmbeddingRuns(r, item));
  }
  if (r.left() != 0) return DataLoss("step plan: {} bytes after the last item", r.left());
  return plan;
}

}  // namespace k3::model
