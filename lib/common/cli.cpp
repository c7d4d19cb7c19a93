#include "lib/common/cli.h"

#include <cstdio>

#include "lib/common/version.h"

namespace dbs::cli {

std::string version_line(std::string_view binary) {
  return std::string(binary) + " " DBS_VERSION " (git " DBS_GIT_DESCRIBE "; " DBS_BUILDTYPE
         " build, SIMD " DBS_SIMD ")";
}

BuildInfo build_info() {
  return {DBS_VERSION, DBS_GIT_DESCRIBE, DBS_BUILDTYPE, DBS_SIMD};
}

void add_version_flag(CLI::App& app, std::string_view binary) {
  app.set_version_flag("--version", [b = std::string(binary)] { return version_line(b); },
                       "print the version, git revision and build options, then exit");
}

std::optional<int> parse(CLI::App& app, int argc, char** argv, std::string_view binary) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%.*s: error: %s\nRun with --help for the options.\n",
                 static_cast<int>(binary.size()), binary.data(), e.what());
    return usage_error;
  }
}

int fail(std::string_view binary, std::string_view what, int code) {
  std::fprintf(stderr, "%.*s: error: %.*s\n", static_cast<int>(binary.size()), binary.data(),
               static_cast<int>(what.size()), what.data());
  return code;
}

}  // namespace dbs::cli
