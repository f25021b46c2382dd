// Plan output in three formats. The table and Markdown forms share one row model; JSON mirrors the structs.
#include "src/deploy/plan_format.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace k3::deploy {
namespace {

using OrderedJson = nlohmann::ordered_json;
using Rows = std::vector<std::vector<std::string>>;

std::string Gb(double gb) { return fmt::format("{:.1f} GB", gb); }

std::string LayoutText(const Layout& l) {
  std::string s = fmt::format("TP={}", l.tp);
  if (l.pp > 1) s += fmt::format(" PP={}", l.pp);
  if (l.ep > 1) s += fmt::format(" EP={}", l.ep);
  return s;
}

std::string RenderRows(const Rows& rows, bool markdown) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line = markdown ? "|" : "";
    for (size_t i = 0; i < rows[r].size(); ++i) {
      if (markdown) {
        line += " " + rows[r][i] + " |";
      } else {
        line += rows[r][i] + std::string(width[i] - rows[r][i].size() + 2, ' ');
      }
    }
    while (!markdown && !line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (markdown && r == 0) {
      out += "|";
      for (size_t i = 0; i < rows[r].size(); ++i) out += "---|";
      out += "\n";
    }
  }
  return out;
}

Rows FitRows(const Plan& plan) {
  Rows rows = {{"Configuration", "Total VRAM", "Layout", "Need / GPU", "Usable / GPU", "Meets Requirement"}};
  for (const FitRow& f : plan.fit_table) {
    rows.push_back({fmt::format("{}x {}", f.config.count, f.config.gpu),
                    fmt::format("{:.0f} GB", f.total_vram_gb), LayoutText(f.layout), Gb(f.per_gpu.need_gb),
                    Gb(f.per_gpu.usable_gb), f.per_gpu.fits ? "Meets" : "Below"});
  }
  return rows;
}

Rows TargetRows(const Plan& plan) {
  Rows rows = {{"Target", "Instance", "GPUs", "Arch", "Nodes", "Layout", "Need / GPU", "Cost / hour",
                "Cost / month (730 h)", "Load", "Startup budget"}};
  for (const TargetPlan& t : plan.targets) {
    std::string hardware = fmt::format("{}x {}", t.instance.gpu_count, t.instance.gpu);
    if (t.cpu_only) {
      hardware = t.instance.CpuOnly() ? fmt::format("CPU, {} NUMA", t.instance.cpu.numa_nodes)
                                      : hardware + " unused (k3: CPU)";
    }
    const std::string need = t.cpu_only ? Gb(t.cpu.ram.need_gb) + " / rank" : Gb(t.per_gpu.need_gb);
    rows.push_back({t.target.id, t.instance.id, hardware, t.instance.cpu_arch,
                    t.fits ? std::to_string(t.layout.nodes) : "does not fit", LayoutText(t.layout), need,
                    FormatCostPerHour(t.cost), FormatCostPerMonth(t.cost),
                    FormatDuration(t.probes.load_seconds), FormatDuration(t.probes.startup_budget_seconds)});
  }
  return rows;
}

std::string Millions(int64_t n) { return fmt::format("{:.1f} M", static_cast<double>(n) / 1e6); }

// The vision tower's lines of the header: parameters from the widths, one image's activations, formulas.
std::string VisionLines(const Plan& plan) {
  if (plan.vision_left_out) {
    return "Vision tower: left out (--no-vision: text-only serving, e.g. vLLM --limit-mm-per-prompt "
           "'{\"image\": 0}')\n";
  }
  if (!plan.vision) return "";
  const VisionPlan& v = *plan.vision;
  const VisionTowerSpec& s = v.spec;
  const int64_t merged = s.merge_h * s.merge_w * s.hidden;
  std::string out = fmt::format(
      "Vision tower: {} params = tower {} [3 p^2 h + P h + L (2h + 4 q h + 2 h I) + h; h {}, L {}, q {} "
      "({} heads x {}), I {}, p {}, P {}x{}] + projector {} [(m h)^2 + m h T + T; m h {}, T {}] -> {} in "
      "bf16 ({}; {})\n",
      Millions(v.params()), Millions(v.tower_params), s.hidden, s.layers, s.qkv_hidden, s.heads,
      s.qkv_hidden / s.heads, s.intermediate, s.patch, s.pos_emb_h, s.pos_emb_w, Millions(v.projector_params),
      merged, s.text_hidden, Gb(static_cast<double>(v.weight_bytes()) / 1e9),
      s.in_weight_bytes ? "already in the checkpoint's weight bytes" : "not in the weight bytes above",
      s.source);
  out += fmt::format(
      "Vision activations of one image at in_patch_limit S = {} patches: hidden states 2 S h b {} + "
      "max(attention 4 S q b {}, MLP 2 S I b {}) = {} with fused attention; dense scores would add S^2 b = "
      "{} "
      "per head ({} in all)\n",
      s.in_patch_limit, Gb(v.hidden_states_bytes / 1e9), Gb(v.attention_bytes / 1e9), Gb(v.mlp_bytes / 1e9),
      Gb(v.activation_bytes / 1e9), Gb(v.scores_per_head_bytes / 1e9), Gb(v.activation_dense_bytes / 1e9));
  out += fmt::format(
      "Vision per GPU / rank: a whole tower{} + one image's activations = {:.2f} GB at TP x PP = 1 "
      "(--no-vision "
      "leaves it out)\n",
      s.in_weight_bytes ? " less the 1 / (TP x PP) share the weights hold" : "",
      VisionGbPerShard(plan.assumptions, 1));
  return out;
}

std::string Header(const Plan& plan) {
  const ModelSpec& m = plan.model;
  return fmt::format(
             "Model {} ({}): weights {} ({}; {})\n"
             "Cache at max-model-len {} x concurrency {}: MLA latent {} B/token -> {} per copy (every TP "
             "rank holds "
             "its PP stage's share); KDA state {} per sequence -> {}\n"
             "Assumptions: overhead {} per GPU, gpu_memory_utilization {:.2f}; weights read at {} (load "
             "{})\n",
             m.id, m.hf_id, Gb(plan.totals.weights_gb), m.weight_format, m.weight_bytes_note,
             plan.assumptions.max_model_len, plan.assumptions.concurrency, m.MlaBytesPerToken(),
             Gb(plan.totals.mla_cache_gb_per_copy),
             fmt::format("{:.1f} MB", m.kda_state_bytes_per_sequence / 1e6), Gb(plan.totals.kda_state_gb),
             Gb(plan.assumptions.overhead_gb_per_gpu), plan.assumptions.gpu_memory_utilization,
             plan.bandwidth_text,
             FormatDuration(static_cast<double>(m.weight_bytes) * 8 / plan.bandwidth_bps)) +
         VisionLines(plan);
}

std::string Details(const Plan& plan, bool markdown) {
  std::string out;
  for (const TargetPlan& t : plan.targets) {
    out += markdown ? fmt::format("\n### {} ({})\n\n", t.target.id, t.target.platform)
                    : fmt::format("\n{} ({})\n", t.target.id, t.target.platform);
    const std::string bullet = markdown ? "- " : "  - ";
    if (t.cpu_only && !t.instance.CpuOnly()) {
      out += bullet + fmt::format(
                          "{} x {}: k3 runs its ranks on the host CPUs ({}, {} vCPU, {} GiB RAM); the {} "
                          "GPUs per node are not used (the pods request none)\n",
                          t.layout.nodes * t.replicas, t.instance.id, t.instance.cpu_arch, t.instance.vcpu,
                          t.instance.ram_gib, t.instance.gpu_count);
      out += CpuPlanFormula(plan.model, t.instance, t.cpu, bullet);
    } else if (t.cpu_only) {
      out +=
          bullet + fmt::format(
                       "{} x {}: CPU-only, {}, {} socket(s), {} NUMA node(s), {} vCPU, {} GiB RAM, "
                       "{:.1f} GB/s peak DRAM bandwidth per socket, {:.0f} Gbit/s network\n",
                       t.layout.nodes * t.replicas, t.instance.id, t.instance.cpu_arch,
                       t.instance.cpu.sockets, t.instance.cpu.numa_nodes, t.instance.vcpu, t.instance.ram_gib,
                       t.instance.cpu.memory_bandwidth_gbs_per_socket, t.instance.cpu.network_gbps);
      out += CpuPlanFormula(plan.model, t.instance, t.cpu, bullet);
    } else {
      out += bullet + fmt::format("{} x {}: {} GPUs per node, {} x {} GB, {}, {} vCPU, {} GiB RAM; {}\n",
                                  t.layout.nodes * t.replicas, t.instance.id, t.instance.gpu_count,
                                  t.instance.gpu_count, t.instance.gpu_memory_gb, t.instance.cpu_arch,
                                  t.instance.vcpu, t.instance.ram_gib, t.instance.interconnect);
      out += bullet + fmt::format("per GPU: weights {} + MLA {} + KDA {}{} + overhead {} = {} of {} usable\n",
                                  Gb(t.per_gpu.weights_gb), Gb(t.per_gpu.mla_cache_gb),
                                  Gb(t.per_gpu.kda_state_gb),
                                  t.per_gpu.vision_gb > 0 ? " + vision " + Gb(t.per_gpu.vision_gb) : "",
                                  Gb(t.per_gpu.overhead_gb), Gb(t.per_gpu.need_gb), Gb(t.per_gpu.usable_gb));
    }
    out += bullet + fmt::format(
                        "probes: startupProbe period {} s x failureThreshold {} = {} (2 x load {} + 600 s); "
                        "readiness every {} s\n",
                        t.probes.startup_period_seconds, t.probes.startup_failure_threshold,
                        FormatDuration(t.probes.startup_budget_seconds),
                        FormatDuration(t.probes.load_seconds), t.probes.readiness_period_seconds);
    if (t.cost.known) {
      for (const Price& p : t.cost.prices) {
        out += bullet + fmt::format("price: USD {}/h per instance, {} [{} {}{}]\n", FormatUsd(p.usd_per_hour),
                                    p.what, p.source, p.date, p.verified ? "" : ", unverified");
      }
    } else {
      out += bullet + "price: unknown (" + t.cost.unknown_reason + ")\n";
    }
    for (const std::string& w : t.warnings) out += bullet + "WARNING: " + w + "\n";
    for (const std::string& n : t.notes) out += bullet + n + "\n";
  }
  out += markdown ? "\n### Sources\n\n" : "\nSources\n";
  for (const Source& s : plan.sources_cited) {
    out += (markdown ? "- " : "  ") + fmt::format("{}: {} ({})\n", s.key, s.title, s.date);
  }
  return out;
}

OrderedJson LayoutJson(const Layout& l) {
  return {{"nodes", l.nodes}, {"gpus_per_node", l.gpus_per_node}, {"tp", l.tp}, {"pp", l.pp}, {"ep", l.ep}};
}

OrderedJson PerGpuJson(const MemoryPerGpu& m) {
  return {{"weights_gb", m.weights_gb},     {"mla_cache_gb", m.mla_cache_gb},
          {"kda_state_gb", m.kda_state_gb}, {"vision_gb", m.vision_gb},
          {"overhead_gb", m.overhead_gb},   {"need_gb", m.need_gb},
          {"usable_gb", m.usable_gb},       {"fits", m.fits}};
}

OrderedJson CpuJson(const TargetPlan& t) {
  const CpuPlan& c = t.cpu;
  const DecodeEstimate& d = c.decode;
  return {{"nodes", c.nodes},
          {"ranks_per_node", c.ranks_per_node},
          {"tensor_parallel_size", c.tp()},
          {"ram_per_rank_gb",
           {{"weights", c.ram.weights_gb},
            {"mla_cache", c.ram.mla_cache_gb},
            {"kda_state", c.ram.kda_state_gb},
            {"vision", c.ram.vision_gb},
            {"margin", c.ram.overhead_gb},
            {"total", c.ram.need_gb}}},
          {"ram_per_node_gb", c.ram.node_need_gb},
          {"ram_usable_per_node_gb", c.ram.node_usable_gb},
          {"decode",
           {{"routed_bytes_per_token", d.routed_bytes_per_token},
            {"non_expert_bytes_per_token", d.dense_bytes_per_token},
            {"bytes_per_rank", d.bytes_per_rank},
            {"bandwidth_per_rank_gbs", d.bandwidth_per_rank_gbs},
            {"memory_efficiency", c.assumptions.memory_efficiency},
            {"memory_seconds", d.memory_seconds},
            {"all_reduces_per_token", d.all_reduces_per_token},
            {"ring_steps", d.ring_steps},
            {"step_latency_us", d.step_latency_us},
            {"network_seconds", d.network_seconds},
            {"tokens_per_second", d.tokens_per_second}}},
          {"memory_bandwidth_note", t.instance.cpu.memory_bandwidth_note}};
}

OrderedJson PlanJson(const Plan& plan) {
  OrderedJson j;
  const ModelSpec& m = plan.model;
  j["model"] = {{"id", m.id},
                {"hf_id", m.hf_id},
                {"weight_bytes", m.weight_bytes},
                {"weight_bytes_note", m.weight_bytes_note},
                {"mla_bytes_per_token", m.MlaBytesPerToken()},
                {"kda_state_bytes_per_sequence", m.kda_state_bytes_per_sequence}};
  j["assumptions"] = {{"max_model_len", plan.assumptions.max_model_len},
                      {"concurrency", plan.assumptions.concurrency},
                      {"overhead_gb_per_gpu", plan.assumptions.overhead_gb_per_gpu},
                      {"gpu_memory_utilization", plan.assumptions.gpu_memory_utilization},
                      {"weights_bandwidth_bps", plan.bandwidth_bps}};
  j["totals"] = {{"weights_gb", plan.totals.weights_gb},
                 {"mla_cache_gb_per_copy", plan.totals.mla_cache_gb_per_copy},
                 {"kda_state_gb", plan.totals.kda_state_gb}};
  if (plan.vision) {
    const VisionPlan& v = *plan.vision;
    const VisionTowerSpec& s = v.spec;
    j["vision"] = {
        {"source", s.source},
        {"hidden_size", s.hidden},
        {"num_hidden_layers", s.layers},
        {"num_attention_heads", s.heads},
        {"qkv_hidden_size", s.qkv_hidden},
        {"intermediate_size", s.intermediate},
        {"patch_size", s.patch},
        {"merge_kernel_size", {s.merge_h, s.merge_w}},
        {"pos_emb", {s.pos_emb_h, s.pos_emb_w}},
        {"text_hidden_size", s.text_hidden},
        {"dtype_bytes", s.dtype_bytes},
        {"tower_params", v.tower_params},
        {"projector_params", v.projector_params},
        {"params", v.params()},
        {"weight_bytes", v.weight_bytes()},
        {"in_weight_bytes", s.in_weight_bytes},
        {"params_formula", "tower 3 p^2 h + P h + L (2h + 4 q h + 2 h I) + h; projector (m h)^2 + m h T + T"},
        {"image_activations",
         {{"in_patch_limit", s.in_patch_limit},
          {"hidden_states_bytes", v.hidden_states_bytes},
          {"attention_bytes", v.attention_bytes},
          {"mlp_bytes", v.mlp_bytes},
          {"dense_scores_per_head_bytes", v.scores_per_head_bytes},
          {"peak_bytes", v.activation_bytes},
          {"peak_dense_bytes", v.activation_dense_bytes},
          {"formula",
           "2 S h b + max(4 S q b, 2 S I b); dense attention: 2 S h b + 4 S q b + S^2 b (one head)"}}},
        {"per_gpu_placement", "a whole tower and one largest image per GPU / CPU rank"}};
  } else {
    j["vision"] = nullptr;
  }
  OrderedJson fit = OrderedJson::array();
  for (const FitRow& f : plan.fit_table) {
    fit.push_back({{"gpu", f.config.gpu},
                   {"count", f.config.count},
                   {"total_vram_gb", f.total_vram_gb},
                   {"layout", LayoutJson(f.layout)},
                   {"per_gpu", PerGpuJson(f.per_gpu)},
                   {"meets", f.per_gpu.fits}});
  }
  j["fit_table"] = fit;
  OrderedJson targets = OrderedJson::array();
  for (const TargetPlan& t : plan.targets) {
    OrderedJson prices = OrderedJson::array();
    for (const Price& p : t.cost.prices) {
      prices.push_back({{"usd_per_hour", p.usd_per_hour},
                        {"what", p.what},
                        {"source", p.source},
                        {"date", p.date},
                        {"verified", p.verified}});
    }
    OrderedJson cost = {
        {"known", t.cost.known}, {"billed_instances", t.cost.billed_instances}, {"prices", prices}};
    if (t.cost.known) {
      cost["usd_per_hour"] = {t.cost.low_per_hour, t.cost.high_per_hour};
      cost["usd_per_month"] = {t.cost.low_per_hour * CostRange::kHoursPerMonth,
                               t.cost.high_per_hour * CostRange::kHoursPerMonth};
    } else {
      cost["unknown_reason"] = t.cost.unknown_reason;
    }
    targets.push_back({{"target", t.target.id},
                       {"platform", t.target.platform},
                       {"instance", t.instance.id},
                       {"gpu", t.instance.gpu},
                       {"cpu_arch", t.instance.cpu_arch},
                       {"fits", t.fits},
                       {"replicas", t.replicas},
                       {"layout", LayoutJson(t.layout)},
                       {"per_gpu", PerGpuJson(t.per_gpu)},
                       {"cost", cost},
                       {"load_seconds", t.probes.load_seconds},
                       {"startup_probe",
                        {{"period_seconds", t.probes.startup_period_seconds},
                         {"failure_threshold", t.probes.startup_failure_threshold},
                         {"budget_seconds", t.probes.startup_budget_seconds}}},
                       {"warnings", t.warnings},
                       {"notes", t.notes}});
    if (t.cpu_only) targets.back()["cpu"] = CpuJson(t);
  }
  j["targets"] = targets;
  OrderedJson sources = OrderedJson::array();
  for (const Source& s : plan.sources_cited)
    sources.push_back({{"key", s.key}, {"title", s.title}, {"date", s.date}});
  j["sources"] = sources;
  return j;
}

}  // namespace

Result<PlanFormat> ParsePlanFormat(const std::string& name) {
  if (name == "table") return PlanFormat::kTable;
  if (name == "markdown") return PlanFormat::kMarkdown;
  if (name == "json") return PlanFormat::kJson;
  return InvalidArgument("--format '{}': one of table, json, markdown", name);
}

std::string FormatUsd(double value) {
  const long long whole = std::llround(value);
  std::string digits = std::to_string(whole);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  if (value < 1000 && std::fabs(value - static_cast<double>(whole)) > 1e-9)
    return fmt::format("{:.2f}", value);
  return out;
}

std::string FormatCostPerHour(const CostRange& cost) {
  if (!cost.known) return "unknown";
  if (cost.low_per_hour == cost.high_per_hour) return "USD " + FormatUsd(cost.low_per_hour);
  return "USD " + FormatUsd(cost.low_per_hour) + "-" + FormatUsd(cost.high_per_hour);
}

std::string FormatCostPerMonth(const CostRange& cost) {
  if (!cost.known) return "unknown";
  const double low = cost.low_per_hour * CostRange::kHoursPerMonth;
  const double high = cost.high_per_hour * CostRange::kHoursPerMonth;
  if (low == high) return "USD " + FormatUsd(low);
  return "USD " + FormatUsd(low) + "-" + FormatUsd(high);
}

std::string FormatDuration(double seconds) {
  const long long s = std::llround(seconds);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string FormatPlan(const Plan& plan, PlanFormat format) {
  switch (format) {
    case PlanFormat::kJson:
      return PlanJson(plan).dump(2) + "\n";
    case PlanFormat::kMarkdown:
      return "## Plan\n\n" + Header(plan) + "\n### GPU configurations (guide §2.2)\n\n" +
             RenderRows(FitRows(plan), true) + "\n### Targets\n\n" + RenderRows(TargetRows(plan), true) +
             Details(plan, true);
    default:
      return Header(plan) + "\nGPU configurations (guide §2.2)\n" + RenderRows(FitRows(plan), false) +
             "\nTargets\n" + RenderRows(TargetRows(plan), false) + Details(plan, false);
  }
}

}  // namespace k3::deploy
