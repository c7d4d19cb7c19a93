// The C++ API of libdbs from the installed tree only:
//   g++ -std=c++20 plan_epochs.cpp $(pkg-config --cflags --libs dbs) -o plan_epochs
//   ./plan_epochs [POLICY]
// A job of one rank (a job of several gives make_planner its ranks' allgather, as
// examples/c/mpi_loop.c does over MPI): three epochs, the rank's samples of every step from the
// Sampler, each step's time into a Meter, and the plan of the next epoch from the embedded
// policy. A bad policy is a dbs::ConfigError, caught by its type.
#include <dbs/error.h>
#include <dbs/meter.h>
#include <dbs/planner.h>
#include <dbs/steps.h>
#include <dbs/version.h>

#include <cstdio>
#include <memory>
#include <vector>

int main(int argc, char** argv) {
  const std::int64_t samples = 6000;
  dbs::Settings settings;
  settings.global_batch = 128;
  settings.samples_per_epoch = samples;
  try {
    settings.policy = dbs::parse_policy(argc > 1 ? argv[1] : "dbs-rate");
    const dbs::Group group{0, 1, {}, "", ""};
    std::unique_ptr<dbs::Planner> planner = dbs::make_planner(settings, group);
    std::printf("libdbs %d.%d\n", dbs::api_version().major, dbs::api_version().minor);
    dbs::Sampler sampler(samples, settings.global_batch, 1, 7);
    std::int64_t trained = 0;
    for (int epoch = 0; epoch < 3; ++epoch) {
      dbs::Meter meter;
      for (std::int64_t step = 0; step < sampler.steps(); ++step) {
        const std::vector<std::int64_t> mine = sampler.indices(planner->plan(), 0, step);
        trained += static_cast<std::int64_t>(mine.size());
        meter.step(static_cast<int>(mine.size()), 1e-4 * static_cast<double>(mine.size()));
      }
      const dbs::Report report = meter.report(planner->plan(), 0);
      const dbs::Planned next = planner->next({&report, 1});
      std::printf("epoch %d: next plan %d (%s)\n", epoch + 1, next.plan.batch[0],
                  next.source.c_str());
    }
    planner->finish(true);
    std::printf("ok: %lld of %lld samples trained\n", static_cast<long long>(trained),
                static_cast<long long>(3 * samples));
  } catch (const dbs::ConfigError& e) {
    std::fprintf(stderr, "plan_epochs: %s\n", e.what());
    return 2;
  }
  return 0;
}
