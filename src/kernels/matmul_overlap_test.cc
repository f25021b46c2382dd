// ScheduleOverlap (matmul_overlap.h): every task runs once, a unit is a run of compute tasks then one stream
// task, and each compute task prefetches a slice of that stream task within its budget.
#include "src/kernels/matmul_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace k3::kernels {
namespace {

using Role = OverlapTaskInfo::Role;

// Checks the invariants of a schedule of `tasks`; returns the number of units with a stream task.
size_t CheckSchedule(const std::vector<OverlapTaskInfo>& tasks, const std::vector<ScheduledTask>& order,
                     const std::vector<ScheduleUnit>& units) {
  // Every task exactly once; units tile the order.
  std::vector<int> seen(tasks.size(), 0);
  for (const ScheduledTask& s : order) {
    EXPECT_LT(s.task, tasks.size());
    if (s.task < tasks.size()) ++seen[s.task];
  }
  for (size_t t = 0; t < tasks.size(); ++t) EXPECT_EQ(seen[t], 1) << "task " << t;
  uint32_t next = 0;
  size_t paired_units = 0;
  for (const ScheduleUnit& u : units) {
    EXPECT_EQ(u.begin, next);
    EXPECT_LT(u.begin, u.end);
    next = u.end;
    // Compute tasks first, then one stream task; prefetches only by compute tasks, into that stream task,
    // each within its budget, in contiguous slices from its start.
    size_t i = u.begin;
    size_t compute_bytes = 0;
    for (; i < u.end && tasks[order[i].task].role == Role::kCompute; ++i) {
      compute_bytes += tasks[order[i].task].weight_bytes;
    }
    if (i == u.end || i == u.begin) {  // no stream, or no compute: a unit of one task, no prefetch
      EXPECT_EQ(u.end - u.begin, 1u);
      EXPECT_EQ(order[u.begin].prefetch_bytes, 0u);
      continue;
    }
    ++paired_units;
    const OverlapTaskInfo& stream = tasks[order[i].task];
    const char* expected = stream.weights;
    size_t prefetched = 0;
    for (size_t c = u.begin; c < i; ++c) {
      EXPECT_LE(order[c].prefetch_bytes, kPrefetchBytesPerComputeByte * tasks[order[c].task].weight_bytes);
      if (order[c].prefetch_bytes == 0) continue;
      EXPECT_EQ(order[c].prefetch_begin, expected) << "slices are contiguous";
      expected += order[c].prefetch_bytes;
      prefetched += order[c].prefetch_bytes;
    }
    EXPECT_LE(prefetched, stream.weight_bytes);
    EXPECT_EQ(prefetched,
              std::min<size_t>(stream.weight_bytes, kPrefetchBytesPerComputeByte * compute_bytes));
    // Every compute task of the unit is needed: without the last one the stream would not be covered.
    const size_t last_bytes = tasks[order[i - 1].task].weight_bytes;
    EXPECT_LT(kPrefetchBytesPerComputeByte * (compute_bytes - last_bytes), stream.weight_bytes);
    EXPECT_EQ(u.end, i + 1) << "one stream task, last";
    EXPECT_EQ(tasks[order[i].task].role, Role::kStream);
    EXPECT_EQ(order[i].prefetch_bytes, 0u);
  }
  EXPECT_EQ(next, order.size());
  return paired_units;
}

std::vector<OverlapTaskInfo> Tasks(const std::vector<Role>& roles, std::vector<char>* weights) {
  constexpr size_t kBytes = 4096;
  weights->assign(roles.size() * kBytes, 0);
  std::vector<OverlapTaskInfo> tasks;
  for (size_t t = 0; t < roles.size(); ++t) {
    // Compute tasks read 1 KiB each (a 1.5 KiB budget), stream tasks 4 KiB.
    const size_t bytes = roles[t] == Role::kCompute ? 1024 : kBytes;
    tasks.push_back(OverlapTaskInfo{roles[t], weights->data() + t * kBytes, bytes});
  }
  return tasks;
}

struct Schedule {
  std::vector<ScheduledTask> order;
  std::vector<ScheduleUnit> units;
};

// ScheduleOverlap of `tasks`, its invariants checked (CheckSchedule) and the paired units counted.
Schedule ScheduleAndCheck(const std::vector<OverlapTaskInfo>& tasks, size_t* paired_units) {
  Schedule schedule;
  ScheduleOverlap(tasks, &schedule.order, &schedule.units);
  *paired_units = CheckSchedule(tasks, schedule.order, schedule.units);
  return schedule;
}

TEST(ScheduleOverlapTest, WithoutBothRolesKeepsTaskOrder) {
  std::vector<char> weights;
  for (const std::vector<Role>& roles :
       {std::vector<Role>{Role::kCompute, Role::kOther, Role::kCompute},
        std::vector<Role>{Role::kStream, Role::kStream, Role::kOther}, std::vector<Role>{}}) {
    const std::vector<OverlapTaskInfo> tasks = Tasks(roles, &weights);
    size_t paired = 0;
    const Schedule schedule = ScheduleAndCheck(tasks, &paired);
    EXPECT_EQ(paired, 0u);
    ASSERT_EQ(schedule.order.size(), tasks.size());
    ASSERT_EQ(schedule.units.size(), tasks.size());
    for (size_t t = 0; t < tasks.size(); ++t) {
      EXPECT_EQ(schedule.order[t].task, t);
      EXPECT_EQ(schedule.order[t].prefetch_bytes, 0u);
    }
  }
}

TEST(ScheduleOverlapTest, SharesComputeTasksAmongStreamsInProportion) {
  std::vector<char> weights;
  // 64 compute and 32 stream tasks (an MoE layer's expert gate and up beside the shared experts').
  std::vector<Role> roles(64, Role::kCompute);
  roles.insert(roles.end(), 32, Role::kStream);
  roles.push_back(Role::kOther);
  const std::vector<OverlapTaskInfo> tasks = Tasks(roles, &weights);
  size_t paired = 0;
  const Schedule schedule = ScheduleAndCheck(tasks, &paired);
  const std::vector<ScheduledTask>& order = schedule.order;
  const std::vector<ScheduleUnit>& units = schedule.units;
  EXPECT_EQ(paired, 32u);
  ASSERT_EQ(units.size(), 33u);
  for (size_t u = 0; u < 32; ++u) {
    EXPECT_EQ(units[u].end - units[u].begin, 3u);  // two compute tasks, then one stream
    // Two compute tasks of 1 KiB: 3 KiB of the stream's 4, 1.5 KiB each.
    EXPECT_EQ(order[units[u].begin].prefetch_bytes, 1536u);
    EXPECT_EQ(order[units[u].begin + 1].prefetch_bytes, 1536u);
  }
  EXPECT_EQ(tasks[order[units[32].begin].task].role, Role::kOther);
}

TEST(ScheduleOverlapTest, MoreStreamsThanComputeTasksAndMixedOrders) {
  std::vector<char> weights;
  for (const std::vector<Role>& roles :
       {std::vector<Role>{Role::kStream, Role::kCompute, Role::kStream, Role::kStream, Role::kOther,
                          Role::kCompute, Role::kStream, Role::kStream},
        std::vector<Role>{Role::kCompute, Role::kStream, Role::kCompute, Role::kCompute, Role::kOther,
                          Role::kCompute, Role::kCompute}}) {
    const std::vector<OverlapTaskInfo> tasks = Tasks(roles, &weights);
    size_t paired = 0;
    ScheduleAndCheck(tasks, &paired);
    const size_t computes = std::count(roles.begin(), roles.end(), Role::kCompute);
    const size_t streams = std::count(roles.begin(), roles.end(), Role::kStream);
    EXPECT_EQ(paired, std::min(computes, streams));
  }
}

TEST(ScheduleOverlapTest, BudgetCapsAtTheStreamsBytes) {
  // A compute task whose budget exceeds the stream: it alone prefetches the stream, once; the other
  // compute task is not needed and runs alone.
  std::vector<char> weights(1 << 16);
  const std::vector<OverlapTaskInfo> tasks = {{Role::kCompute, nullptr, 8192},
                                              {Role::kCompute, nullptr, 8192},
                                              {Role::kStream, weights.data(), 1000}};
  size_t paired = 0;
  const Schedule schedule = ScheduleAndCheck(tasks, &paired);
  EXPECT_EQ(paired, 1u);
  ASSERT_EQ(schedule.units.size(), 2u);
  EXPECT_EQ(schedule.units[0].end - schedule.units[0].begin, 2u);
  EXPECT_EQ(schedule.order[0].prefetch_bytes, 1000u);
}

TEST(ScheduleOverlapTest, OneStreamTakesOnlyTheComputeTasksItNeeds) {
  // 64 compute tasks of 1 KiB and one stream of 4 KiB: 3 compute tasks (1.5 KiB each) cover it; the other
  // 61 stay units of their own, so two threads still share the group.
  std::vector<char> weights;
  std::vector<Role> roles(64, Role::kCompute);
  roles.push_back(Role::kStream);
  const std::vector<OverlapTaskInfo> tasks = Tasks(roles, &weights);
  size_t paired = 0;
  const Schedule schedule = ScheduleAndCheck(tasks, &paired);
  const std::vector<ScheduledTask>& order = schedule.order;
  EXPECT_EQ(paired, 1u);
  ASSERT_EQ(schedule.units.size(), 62u);
  EXPECT_EQ(schedule.units[0].end - schedule.units[0].begin, 4u);
  EXPECT_EQ(order[0].prefetch_bytes + order[1].prefetch_bytes + order[2].prefetch_bytes, 4096u);
}

}  // namespace
}  // namespace k3::kernels
