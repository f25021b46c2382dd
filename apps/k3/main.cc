// k3: the single binary of k3stack. Subcommands are registered from cmd_<name>.cc (commands.h).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/k3/commands.h"
#include "apps/k3/version.h"
#ifdef K3_HAVE_SERVE
#include "apps/k3/serve_vllm_flags.h"
#endif

int main(int argc, char** argv) {
  k3::app::CommandLine().assign(argv, argv + argc);
  CLI::App app{"k3stack: serve, deploy and verify Kimi K3"};
  app.set_version_flag("--version", std::string("k3 ") + K3_VERSION_STRING);
  app.require_subcommand(1);
  // Subcommands, in the order `k3 --help` lists them.
#ifdef K3_HAVE_SERVE
  k3::app::RegisterServeCommand(app);
#endif
  k3::app::RegisterPlanCommand(app);
  k3::app::RegisterRenderCommand(app);
  k3::app::RegisterLintCommand(app);
  k3::app::RegisterGenModelCommand(app);
  k3::app::RegisterRunCommand(app);
  k3::app::RegisterTokenizeCommand(app);
  k3::app::RegisterRenderChatCommand(app);
  k3::app::RegisterVerifyCommand(app);
  k3::app::RegisterBenchCommand(app);
  k3::app::RegisterWeightsCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
#ifdef K3_HAVE_SERVE
    // An unexpected flag that vLLM's serve has: say so, and what k3 offers instead.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      bool noted = false;
      for (int i = 1; i < argc; ++i) {
        if (auto note = k3::app::VllmFlagNote(argv[i])) {
          std::fprintf(stderr, "k3: %s\n", note->c_str());
          noted = true;
        }
      }
      if (!noted)
        std::fprintf(stderr,
                     "k3: not a k3 flag (nor a vLLM serve flag k3 knows of); see k3 <command> --help\n");
    }
#endif
    return app.exit(e);
  }
  return k3::app::CommandExitCode();
}
