// Model::Load and `k3 run` on checkpoints written to disk: a good checkpoint loads to the same logits as
// the in-memory tensors and `k3 run` prints top-5 lines and the greedy ids; a missing tensor, a truncated
// shard, a malformed config.json, bad --prompt-ids and out-of-vocabulary ids each make `k3 run` exit
// non-zero with one line on stderr (never a crash).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/base/check.h"
#include "src/model/model.h"
#include "src/model/sequences.h"
#include "src/model/testing/random_model.h"

namespace k3::model {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("k3_run_command_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A checkpoint directory `name` under the test's root, optionally without one tensor.
  std::string Checkpoint(const std::string& name, const std::string& skip = "") {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    Status st = testing::WriteRandomCheckpoint(cfg_, 5, dir.string(), skip);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return dir.string();
  }

  CommandResult RunK3(const std::string& args) {
    const fs::path out = root_ / "stdout.txt", err = root_ / "stderr.txt";
    const std::string cmd =
        std::string(K3_BINARY) + " run " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadAll(out);
    r.err = ReadAll(err);
    return r;
  }

  // Non-zero exit (not a signal), exactly one stderr line mentioning `needle`.
  void ExpectCleanFailure(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_LT(r.exit_code, 128) << "killed by a signal: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }

  fs::path root_;
  io::ModelConfig cfg_ = testing::TinyK3Config();
};

TEST_F(RunCommandTest, LoadsWhatWasWrittenAndRuns) {
  const std::string dir = Checkpoint("good");
  auto loaded = Model::Load(dir, nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto in_memory = testing::MakeRandomModel(cfg_, 5, nullptr);
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().ToString();
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  ForwardOutput a, b;
  Sequences sa(**loaded), sb(**in_memory);
  SequenceBatchItem ia{sa.New(), prompt, true}, ib{sb.New(), prompt, true};
  K3_CHECK_OK(sa.Forward(std::span(&ia, 1), &a));
  K3_CHECK_OK(sb.Forward(std::span(&ib, 1), &b));
  EXPECT_EQ(a.logits, b.logits);

  const fs::path hidden = root_ / "hidden";
  const CommandResult r = RunK3(
      "--model " + dir + " --prompt-ids 1,2,3 --max-new 3 --threads 1 --dump-hidden " + hidden.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // --dump-hidden: the embeddings, each layer and the final norm, [3 prompt rows + 2 steps, hidden] each.
  const std::string shape = "(5, " + std::to_string(cfg_.hidden_size) + ")";
  for (int64_t l = 0; l <= cfg_.num_layers + 1; ++l) {
    const fs::path file =
        l <= cfg_.num_layers ? hidden / fmt::format("layer_{:02d}.npy", l) : hidden / "final_norm.npy";
    const std::string bytes = ReadAll(file);
    EXPECT_NE(bytes.find(shape), std::string::npos) << file;
    EXPECT_GE(bytes.size(), static_cast<size_t>(5 * cfg_.hidden_size * 4)) << file;
  }
  EXPECT_FALSE(fs::exists(hidden / fmt::format("layer_{:02d}.npy", cfg_.num_layers + 1)));
  EXPECT_NE(r.out.find("pos 2 token 3: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 4 token "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("greedy: "), std::string::npos) << r.out;
}

TEST_F(RunCommandTest, MissingTensor) {
  const std::string name = "language_model.model.layers.4.self_attn.o_norm.weight";
  const std::string dir = Checkpoint("missing", name);
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,2"), name);
}

TEST_F(RunCommandTest, TruncatedShard) {
  const std::string dir = Checkpoint("truncated");
  const fs::path shard = fs::path(dir) / "model.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 1000);
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,2"), "model.safetensors");
}

TEST_F(RunCommandTest, MalformedConfig) {
  const std::string dir = Checkpoint("bad_config");
  std::ofstream(fs::path(dir) / "config.json") << "{\"model_type\": \"kimi_k3\", ";
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,2"), "config.json");
}

TEST_F(RunCommandTest, BadPromptIds) {
  const std::string dir = Checkpoint("good");
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,x,3"), "'x'");
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,-4"), "'-4'");
  ExpectCleanFailure(RunK3("--model " + dir + " --prompt-ids 1,128"), "128");
}

}  // namespace
}  // namespace k3::model
