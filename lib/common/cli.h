// What every dbs binary does the same way on its command line: --version, and one exit-code
// convention - 0 for --help/--version, 2 for any usage error (bad option, bad value), 1 for a
// failure at run time - with one error prefix, "BINARY: error: ".
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace dbs::cli {

constexpr int usage_error = 2;
constexpr int runtime_error = 1;

// "dbs-agent 0.1.0 (git 1a6b961; release build, SIMD -mavx2 -mfma)".
std::string version_line(std::string_view binary);

// The parts of version_line (for a build-info metric).
struct BuildInfo {
  std::string version;     // the project's version, "0.1.0"
  std::string git;         // git describe --always --dirty ("unknown" outside git)
  std::string build_type;  // meson buildtype
  std::string simd;        // the SIMD flags of the fast kernels
};
BuildInfo build_info();

// Adds --version to the app (prints version_line and exits 0).
void add_version_flag(CLI::App& app, std::string_view binary);

// Parses argv. Returns nothing when the program should go on, else the exit code to return:
// 0 after --help or --version, usage_error after a parse error (printed as
// "BINARY: error: ..." with a pointer to --help).
std::optional<int> parse(CLI::App& app, int argc, char** argv, std::string_view binary);

// Range checks for numeric options with short messages ("--epochs: must be >= 1, got 0"), in
// place of CLI11's PositiveNumber & co., which print the type's whole range.
CLI::Validator at_least(double lo);
CLI::Validator above(double lo);               // > lo
CLI::Validator between(double lo, double hi);  // lo <= x <= hi

// What a subcommand runs once the command line has chosen it; returns the exit status.
using Action = std::function<int()>;

// Adds the subcommand `name`, whose options parse into *options; when the command line chooses
// it, `action` becomes run(*options). Returns the subcommand, for its options.
template <typename Options, typename Run>
CLI::App* add_command(CLI::App& app, Action& action, std::string name, std::string help,
                      std::shared_ptr<Options> options, Run run) {
  auto* cmd = app.add_subcommand(std::move(name), std::move(help));
  cmd->callback([&action, options, run] { action = [options, run] { return run(*options); }; });
  return cmd;
}

// Prints "BINARY: error: what" on stderr and returns the code, for `return fail(...)`.
int fail(std::string_view binary, std::string_view what, int code);

}  // namespace dbs::cli
