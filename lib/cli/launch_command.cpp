// `tvie launch --nproc N -- COMMAND...`: N local processes with the torchrun environment (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; OMP_NUM_THREADS=1 unless set). If one rank fails, the others
// get --grace-s to stop by themselves (their collectives fail and name the lost rank), then they are terminated.
#include <netdb.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct LaunchOptions {
  int64_t nproc = 2;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 0;  // 0: a free port
  int64_t grace_s = 30;
  std::string config;  // refused: the ranks' command takes --config, after --
  std::vector<std::string> command;
};

// A signal the launcher was asked to stop by (SIGINT, SIGTERM, SIGHUP), for the wait loop to pass on to the ranks.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void note_stop_signal(int sig) { g_stop_signal = sig; }

std::string self_path() {
  char buf[PATH_MAX] = {0};
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "tvie";
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return cat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return cat("was killed by signal ", WTERMSIG(status), " (", ::strsignal(WTERMSIG(status)), ")");
  return "stopped";
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

Runner add_launch_command(CLI::App& app) {
  auto o = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand("launch",
                                 "Start N local processes of COMMAND (after --) with RANK, WORLD_SIZE, LOCAL_RANK, "
                                 "MASTER_ADDR and MASTER_PORT set, as torchrun does");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_field_option(cmd, "--nproc", o->nproc, "Processes (ranks) on this node", "launch.nproc")->capture_default_str();
  add_field_option(cmd, "--master-addr", o->master_addr, "Where rank 0 hosts the rendezvous store",
                   "launch.master_addr")
      ->capture_default_str();
  add_field_option(cmd, "--master-port", o->master_port, "Its port (0: a free one)", "launch.master_port")
      ->capture_default_str();
  add_field_option(cmd, "--grace-s", o->grace_s,
                   "After a rank fails, or the launcher is stopped by SIGINT, SIGTERM or SIGHUP (passed on to every "
                   "rank), seconds the ranks get to stop by themselves before they are terminated; a launcher killed "
                   "outright takes its ranks with it (each gets SIGTERM)",
                   "launch.grace_s")
      ->capture_default_str();
  // Refused as it is parsed (before the generic --config handling of lib/cli/config_file.cpp could read it).
  cmd->add_option("--config", o->config,
                  "Not taken by launch (its options are few): give the ranks' command its --config, after --")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            return "got '" + path + "'; accepted: nothing before --: the ranks' command takes it, e.g. tvie launch " +
                   "-- tvie train --config " + path;
          },
          "", "after --"));
  cmd->add_option("command", o->command, "The command every rank runs, after --; 'tvie' means this tvie");
  record_field(cmd, "launch.command", "COMMAND (after --)");

  return [o]() {
    if (o->nproc < 1 || o->nproc > 1024) throw InvalidArgument("launch.nproc", cat(o->nproc), "an integer in 1..1024");
    if (o->master_port < 0 || o->master_port > 65535)
      throw InvalidArgument("launch.master_port", cat(o->master_port), "0 (a free port) or a TCP port in 1..65535");
    if (o->grace_s < 0) throw InvalidArgument("launch.grace_s", cat(o->grace_s), "an integer >= 0");
    if (o->command.empty())
      throw InvalidArgument("launch.command", "", "a command after --, e.g. -- tvie train --model gpt");
    // Every rank would retry the rendezvous with an address no resolver knows, each printing c10d's warnings.
    addrinfo* resolved = nullptr;
    if (getaddrinfo(o->master_addr.c_str(), nullptr, nullptr, &resolved) != 0)
      throw InvalidArgument("launch.master_addr", o->master_addr,
                            "a host name or address this machine resolves (rank 0's host; 127.0.0.1 on one node)");
    freeaddrinfo(resolved);
    std::vector<std::string> command = o->command;
    if (command[0] == "tvie") command[0] = self_path();
    // --master-port 0: a free port, held bound until the ranks have exited (tvie::ReservedPort), so that no other
    // socket takes it before rank 0's store binds it.
    std::optional<ReservedPort> reserved;
    if (o->master_port == 0) reserved.emplace();
    const int port = reserved ? reserved->port() : static_cast<int>(o->master_port);
    // As torchrun: several ranks on one node each get one intra-op thread unless the user chose otherwise
    // (N ranks x all cores of threads would oversubscribe the node).
    const bool set_threads = o->nproc > 1 && std::getenv("OMP_NUM_THREADS") == nullptr;
    if (set_threads) log::info("OMP_NUM_THREADS=1 for every rank (as torchrun does; set it to choose otherwise)");
    log::info(cat("launching ", o->nproc, " ranks of '", o->command[0], "' with MASTER_ADDR=", o->master_addr,
                  " MASTER_PORT=", port));
    std::cout.flush();
    std::cerr.flush();

    // Stopped by a signal, the launcher passes it on to every rank and waits for them as for a failed rank;
    // killed (SIGKILL), it takes its ranks with it: each gets SIGTERM when the launcher dies (PR_SET_PDEATHSIG).
    struct sigaction stop {};
    stop.sa_handler = note_stop_signal;
    sigemptyset(&stop.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &stop, nullptr);
    const pid_t launcher = ::getpid();
    std::map<pid_t, int64_t> running;  // pid -> rank
    for (int64_t rank = 0; rank < o->nproc; ++rank) {
      const pid_t pid = ::fork();
      if (pid < 0) throw Error(cat("tvie launch: fork(): ", std::strerror(errno)));
      if (pid == 0) {
        for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != launcher) ::_exit(128 + SIGTERM);  // the launcher died before the line above
        if (g_stop_signal != 0) ::_exit(128 + g_stop_signal);
        ::setenv("RANK", std::to_string(rank).c_str(), 1);
        ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
        ::setenv("WORLD_SIZE", std::to_string(o->nproc).c_str(), 1);
        ::setenv("LOCAL_WORLD_SIZE", std::to_string(o->nproc).c_str(), 1);
        ::setenv("MASTER_ADDR", o->master_addr.c_str(), 1);
        ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
        if (set_threads) ::setenv("OMP_NUM_THREADS", "1", 1);
        ::setenv("TVIE_LAUNCHED", "1", 1);  // tvie's ranks leave a bad-input line to rank 0 (lib/cli/main.cpp)
        std::vector<char*> args;
        for (auto& a : command) args.push_back(a.data());
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "tvie launch: rank %lld: cannot run %s: %s\n", static_cast<long long>(rank), args[0],
                     std::strerror(errno));
        ::_exit(127);
      }
      running[pid] = rank;
    }

    using clock = std::chrono::steady_clock;
    int exit_code = 0;
    bool failed = false, terminated = false;
    clock::time_point deadline{};
    int forwarded = 0;  // the stop signal passed on to the ranks
    while (!running.empty()) {
      if (g_stop_signal != 0 && forwarded == 0) {
        forwarded = g_stop_signal;
        std::cerr << "tvie launch: " << ::strsignal(forwarded) << "; passed on to the " << running.size()
                  << " ranks, which get " << o->grace_s << " s to stop\n";
        for (const auto& [p, r] : running) ::kill(p, forwarded);
        if (!failed) {
          failed = true;
          exit_code = 128 + forwarded;
          deadline = clock::now() + std::chrono::seconds(o->grace_s);
        }
      }
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        const int64_t rank = running[pid];
        running.erase(pid);
        if (exit_code_of(status) != 0 && !failed) {
          failed = true;
          exit_code = exit_code_of(status);
          deadline = clock::now() + std::chrono::seconds(o->grace_s);
          std::cerr << "tvie launch: rank " << rank << " (pid " << pid << ") " << describe_status(status)
                    << "; the other ranks get " << o->grace_s << " s to stop\n";
        }
        continue;
      }
      if (pid < 0 && errno != EINTR) break;
      if (failed && clock::now() >= deadline) {
        const int sig = terminated ? SIGKILL : SIGTERM;
        for (const auto& [p, r] : running) {
          std::cerr << "tvie launch: rank " << r << " (pid " << p << ") still runs; sending "
                    << (sig == SIGKILL ? "SIGKILL" : "SIGTERM") << "\n";
          ::kill(p, sig);
        }
        terminated = true;
        deadline = clock::now() + std::chrono::seconds(5);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return exit_code;
  };
}

}  // namespace tvie::cli
